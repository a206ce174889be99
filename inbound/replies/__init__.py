"""The replies inbox: conversations (inbound.models), their services, the pages, the API routes and answering."""
