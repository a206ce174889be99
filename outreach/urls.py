from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/rq/", include("django_rq.urls")),
    path("admin/", admin.site.urls),
]
