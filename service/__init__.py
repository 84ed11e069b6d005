"""What every spangate process shares: settings, logging, CORS and the web plumbing
(error bodies, health routes) the apps use. It imports no app."""
