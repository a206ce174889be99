"""The Replies pages (login required; each view checks its permission). Included at "" by outreach/urls.py."""

from django.urls import path, register_converter

from sequences.storable import RowIdConverter

from . import views

# A conversation's key is its enrollment's: an id past every column never reaches the lookup.
register_converter(RowIdConverter, "id")

urlpatterns = [
    path("replies/", views.reply_list, name="reply_list"),
    path("replies/<id:pk>/", views.reply_detail, name="reply_detail"),
    path("replies/<id:pk>/category/", views.reply_categorize, name="reply_categorize"),
    path("replies/<id:pk>/assign/", views.reply_assign, name="reply_assign"),
    path("replies/<id:pk>/handled/", views.reply_handled, name="reply_handled"),
    path("replies/<id:pk>/answer/", views.reply_answer, name="reply_answer"),
]
