"""The operator UI (login required; every view checks its permission). Included at "" by outreach/urls.py."""

from django.contrib.auth import views as auth_views
from django.urls import path

from mailboxes import views as mailbox_views

from . import bulk, contacts, editor, enroll_upload, preview, views

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.dashboard, name="dashboard"),
    path("sequences/", views.sequence_list, name="sequence_list"),
    path("sequences/new/", editor.sequence_new, name="sequence_new"),
    path("sequences/<int:pk>/", views.sequence_detail, name="sequence_detail"),
    path("sequences/<int:pk>/edit/", editor.sequence_edit, name="sequence_edit"),
    path("sequences/<int:pk>/steps/new/", editor.step_new, name="step_new"),
    path("sequences/<int:pk>/export.toml", editor.sequence_export, name="sequence_export"),
    path("steps/<int:pk>/edit/", editor.step_edit, name="step_edit"),
    path("steps/<int:pk>/delete/", editor.step_delete, name="step_delete"),
    path("steps/<int:pk>/move/", editor.step_move, name="step_move"),
    path("steps/<int:pk>/preview/", preview.step_preview_page, name="step_preview"),
    path("steps/<int:pk>/send-test/", preview.step_send_test, name="step_send_test"),
    path("sequences/<int:pk>/pause/", views.sequence_pause, name="sequence_pause"),
    path("sequences/<int:pk>/resume/", views.sequence_resume, name="sequence_resume"),
    path("sequences/<int:pk>/bulk/", bulk.enrollment_bulk, name="enrollment_bulk"),
    path("sequences/<int:pk>/enroll/", enroll_upload.enroll_upload, name="enroll_upload"),
    path("sequences/<int:pk>/enroll/<slug:token>/", enroll_upload.enroll_map, name="enroll_map"),
    path("sequences/<int:pk>/enroll/<slug:token>/run/", enroll_upload.enroll_run, name="enroll_run"),
    path("sequences/<int:pk>/enrolling/<slug:job_id>/", enroll_upload.enroll_status, name="enroll_status"),
    path("sequences/<int:pk>/enrolling/<slug:job_id>/progress/", enroll_upload.enroll_progress,
         name="enroll_progress"),
    path("contacts/", contacts.contact_list, name="contact_list"),
    path("contacts/<int:pk>/", contacts.contact_detail, name="contact_detail"),
    path("enrollments/<int:pk>/", views.enrollment_detail, name="enrollment_detail"),
    path("enrollments/<int:pk>/pause/", views.enrollment_pause, name="enrollment_pause"),
    path("enrollments/<int:pk>/resume/", views.enrollment_resume, name="enrollment_resume"),
    path("enrollments/<int:pk>/stop/", views.enrollment_stop, name="enrollment_stop"),
    path("jobs/<int:pk>/retry/", views.job_retry, name="job_retry"),
    path("mailboxes/", mailbox_views.mailbox_list, name="mailbox_list"),
    path("mailboxes/<int:pk>/pause/", mailbox_views.mailbox_pause, name="mailbox_pause"),
    path("mailboxes/<int:pk>/resume/", mailbox_views.mailbox_resume, name="mailbox_resume"),
    path("mailboxes/<int:pk>/check/", mailbox_views.mailbox_check, name="mailbox_check"),
    path("incidents/", views.incident_search, name="incident_search"),
    path("incidents/jobs/<int:pk>/", views.incident_job, name="incident_job"),
    path("inbound/", mailbox_views.inbound_list, name="inbound_list"),
    path("inbound/<int:pk>/", mailbox_views.inbound_detail, name="inbound_detail"),
    path("suppressions/", views.suppression_list, name="suppression_list"),
    path("suppressions/history/", views.suppression_history, name="suppression_history"),
    path("suppressions/add/", views.suppression_add, name="suppression_add"),
    path("suppressions/lift/", views.suppression_lift, name="suppression_lift"),
    path("suppressions/import/", views.suppression_import, name="suppression_import"),
    path("suppressions/import/<slug:job_id>/", views.suppression_import_status, name="suppression_import_status"),
    path("suppressions/export.csv", views.suppression_export, name="suppression_export"),
    path("log/", views.operator_log, name="operator_log"),
]
