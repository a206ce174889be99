"""The operator UI and the public endpoints.

access (roles), rows (honest labels, timelines, the operator log), incidents, charts, views, forms,
urls; public (one-click unsubscribe and the ESP webhooks, outside the login wall).
"""
