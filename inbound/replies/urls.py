"""The Replies pages (login required; each view checks its permission). Included at "" by outreach/urls.py."""

from django.urls import path

from . import views

urlpatterns = [
    path("replies/", views.reply_list, name="reply_list"),
    path("replies/<int:pk>/", views.reply_detail, name="reply_detail"),
    path("replies/<int:pk>/category/", views.reply_categorize, name="reply_categorize"),
    path("replies/<int:pk>/assign/", views.reply_assign, name="reply_assign"),
    path("replies/<int:pk>/handled/", views.reply_handled, name="reply_handled"),
    path("replies/<int:pk>/answer/", views.reply_answer, name="reply_answer"),
]
