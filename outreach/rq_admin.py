"""django-rq's dashboard under /admin/rq/, with a gone job, queue or worker a 404 instead of a 500.

RQ keeps finished and failed jobs only for a while: a link to one (a bookmark, a page left open, a second
admin who deleted it) names a job that is gone. django-rq's views raise for that (NoSuchJobError, an index
past the configured queues, an id RQ refuses to look up); each view here answers those with a 404.
"""

from __future__ import annotations

import functools

from django.http import Http404
from django.urls import URLPattern
from django_rq import urls as django_rq_urls
from rq.exceptions import NoSuchJobError


def _gone_is_404(view):
    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except NoSuchJobError:
            raise Http404("no such job: it finished and was removed, or it never existed") from None
        except IndexError:
            raise Http404("no such queue or worker") from None
        except ValueError as exc:  # RQ refuses a job id with characters it never uses
            raise Http404(f"no such job: {exc}") from None

    return wrapped


def rq_admin_urls():
    """django_rq.urls, each view answering a gone job, queue or worker with a 404."""
    patterns = [URLPattern(p.pattern, _gone_is_404(p.callback), p.default_args, p.name)
                for p in django_rq_urls.urlpatterns]
    return patterns, django_rq_urls.app_name, django_rq_urls.app_name
