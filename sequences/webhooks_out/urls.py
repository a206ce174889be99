"""Outbound webhook pages (admins). Included at "" by outreach/urls.py."""

from django.urls import path

from . import views

urlpatterns = [
    path("outbound-webhooks/", views.webhook_list, name="webhook_list"),
    path("outbound-webhooks/<int:pk>/", views.webhook_edit, name="webhook_edit"),
    path("outbound-webhooks/deliveries/", views.webhook_deliveries, name="webhook_deliveries"),
]
