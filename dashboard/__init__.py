"""The dashboard ({app_url}): browser sign-in, the trace explorer and its JSON API."""
