"""The domain apps serve no HTTP: requests, responses, views, shortcuts and ninja belong to the interfaces (`ui`,
`api`); a domain app's admin (Django's convention) is the one exception. import-linter's layers keep the
interfaces above the domains; this keeps their kind of code out of them, function-local imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOMAIN_APPS = ("sequences", "inbound", "mailboxes", "db")
HTTP = ("django.http", "django.shortcuts", "django.views", "ninja")

pytestmark = pytest.mark.one_database("reads the source, not the database")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _serves_http(names: set[str]) -> list[str]:
    return sorted(name for name in names if any(name == h or name.startswith(h + ".") for h in HTTP))


def test_no_domain_module_but_the_admin_imports_http_or_ninja():
    found = {}
    for app in DOMAIN_APPS:
        for path in (ROOT / app).rglob("*.py"):
            relative = path.relative_to(ROOT)
            if "migrations" in relative.parts or relative.name == "admin.py" or "admin" in relative.parts[1:-1]:
                continue
            if http := _serves_http(_imports(path)):
                found[str(relative)] = http
    assert found == {}


def test_the_check_finds_a_view_in_a_domain_module(tmp_path):
    view = tmp_path / "views.py"
    view.write_text("def page(request):\n    from django.shortcuts import render\n    return render(request, 'x')\n")
    assert _serves_http(_imports(view)) == ["django.shortcuts"]
