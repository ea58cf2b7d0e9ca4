package db

// Internals the db_test package checks.
var (
	SplitWords          = splitWords
	ContentWordsPattern = contentWordsPattern
)
