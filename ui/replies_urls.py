"""The Replies pages (login required; each view checks its permission). Included at "" by outreach/urls.py."""

from django.urls import path, register_converter

from sequences.storable import RowIdConverter

from . import replies as views

# A conversation's key is its enrollment's: an id past every column never reaches the lookup.
register_converter(RowIdConverter, "id")

urlpatterns = [
    path("replies/", views.reply_list, name="reply_list"),
    path("replies/<id:pk>/", views.reply_detail, name="reply_detail"),
    path("replies/<id:pk>/category/", views.reply_categorize, name="reply_categorize"),
    path("replies/<id:pk>/assign/", views.reply_assign, name="reply_assign"),
    path("replies/<id:pk>/handled/", views.reply_handled, name="reply_handled"),
    path("replies/<id:pk>/answer/", views.reply_answer, name="reply_answer"),
    path("replies/<id:pk>/crossed-note/", views.reply_crossed_note, name="reply_crossed_note"),
    path("replies/review/", views.reply_review, name="reply_review"),
    path("replies/data-requests/<id:pk>/export.json", views.data_request_export, name="data_request_export"),
    path("replies/data-requests/<id:pk>/erase/", views.data_request_erase, name="data_request_erase"),
    path("replies/data-requests/<id:pk>/close/", views.data_request_close, name="data_request_close"),
]
