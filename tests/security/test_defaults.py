"""Safe by default: DEBUG off, no known signing key, a clean `check --deploy`, our own error pages, CSP everywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, RequestFactory
from django.urls import reverse
from django.views.defaults import server_error

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {  # the production environment the README documents
    "DJANGO_SECRET_KEY": "k" * 10 + "Zq8-x_Yw3" * 6,
    "ALLOWED_HOSTS": "outreach.example.com",
    "OUTREACH_PUBLIC_URL": "https://outreach.example.com",
    "OUTREACH_BEHIND_PROXY": "1",
}


def django_process(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """CODE in a fresh interpreter with outreach.settings and only the given variables (no key, no DEBUG)."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("DJANGO_SECRET_KEY", "DEBUG", "OUTREACH_HTTPS", "DJANGO_SETTINGS_MODULE",
                          "DJANGO_ALLOW_ASYNC_UNSAFE")}
    clean.update(DJANGO_SETTINGS_MODULE="outreach.settings", OUTREACH_VAR_DIR=str(tmp_path), **env)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
                          timeout=60)


def test_without_a_key_every_entry_point_refuses_with_one_line_naming_the_variable(tmp_path):
    for code in ("import django; django.setup()",
                 "from outreach.wsgi import application",
                 "import sys; sys.argv = ['manage.py', 'rqworker', '--help']; import manage; manage.main()"):
        result = django_process(code, tmp_path)
        assert result.returncode != 0, code
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "DJANGO_SECRET_KEY" in lines[0], result.stderr


def test_debug_is_off_by_default_and_the_per_install_key_is_used(tmp_path):
    (tmp_path / "secret_key").write_text("generated-" + "x7Q" * 20 + "\n")
    result = django_process("from django.conf import settings as s; print(s.DEBUG, s.SECRET_KEY)", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "generated-" + "x7Q" * 20]


def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path):
    result = django_process(
        "import sys; sys.argv = ['manage.py', 'check', '--deploy', '--fail-level', 'WARNING']; "
        "import manage; manage.main()", tmp_path, **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.django_db
def test_our_own_404_and_500_pages():
    response = Client().get("/no-such-page/")
    assert response.status_code == 404 and b"404 \xe2\x80\x94 not found" in response.content
    response = server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    assert b"500 \xe2\x80\x94 something went wrong" in response.content and b"Traceback" not in response.content


@pytest.mark.django_db
def test_every_page_carries_the_csp(users):
    client = Client()
    pages = [reverse("login"), "/admin/login/", "/u/not-a-token/", "/no-such-page/"]
    for url in pages:
        csp = client.get(url)["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp, url
    client.force_login(users["staff"])
    forbidden = client.get(reverse("suppression_add"))
    assert forbidden.status_code == 403 and "script-src 'self'" in forbidden["Content-Security-Policy"]


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["q=%00", "value=a%00b", "action=%00", "q=%ff%fe", "q%00=x"])
def test_control_characters_in_a_query_are_a_400_with_a_message(users, query):
    client = Client(raise_request_exception=False)
    client.force_login(users["admin"])
    for name in ("inbound_list", "suppression_list", "operator_log", "incident_search"):
        response = client.get(f"{reverse(name)}?{query}")
        assert response.status_code == 400, (name, query)
        assert b"control character" in response.content
