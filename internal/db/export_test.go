package db

// Internals the db_test package checks.
var (
	ContentWords        = contentWords
	SplitWords          = splitWords
	ContentWordsPattern = contentWordsPattern
)
