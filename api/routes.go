package api

// extraRoutes lists the route groups of every resource beyond health and
// users; each group lives in its own file.
func (s *Server) extraRoutes() [][]Route {
	return [][]Route{
		s.siteRoutes(),
		s.statsRoutes(),
		s.collectionRoutes(),
		s.documentRoutes(),
		s.revisionRoutes(),
		s.vectorizeRoutes(),
		s.retrievalRoutes(),
		s.jobRoutes(),
		s.reindexRoutes(),
		s.chatSessionRoutes(),
		s.chatRoutes(),
		s.completionRoutes(),
		s.botWebhookRoutes(),
		s.fileRoutes(),
		s.siteAccessRoutes(),
		s.systemConfigRoutes(),
		s.apiKeyRoutes(),
		s.tenantRoutes(),
		s.insightRoutes(),
		s.importRoutes(),
		s.docProcessorRoutes(),
		s.dataSourceRoutes(),
		s.aiGenerateRoutes(),
		s.aiConnectionRoutes(),
		s.mcpRoutes(),
	}
}
