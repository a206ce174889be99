"""The screenshot tour (docs/tour.md): the operator's pages on a desktop (1366 px) and a phone (390 px).

On an empty database (scripts/screenshots gives it a temporary one): the demo data of `setup_demo`, sent to
an in-process capture server, plus the longest names an operator meets and 50 people in one sequence
(proving.harness.long_names); then the pages are served in-process and Debian's Chromium takes each one at
both widths. The PNGs are cut to a page's first screens and reduced to a 256-colour palette, so the tour
stays a few hundred kilobytes.
"""

from __future__ import annotations

import io
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.test.testcases import LiveServerThread

from proving.harness.browser import CHROMIUM, CHROMIUM_ARGS
from proving.harness.long_names import long_names_create, long_names_people
from proving.harness.smtp import SmtpServer
from sequences.models import Enrollment, Sequence

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}
MAX_HEIGHT = {"desktop": 1800, "phone": 2600}  # a page's first screens: enough to show how it reads
COLOURS = 256


def tour_pages() -> dict[str, str]:
    """The pages of the tour, by name: the demo's sequence and its replied enrollment, and every list."""
    demo = Sequence.objects.get(name="Demo intro")
    alan = Enrollment.objects.get(sequence=demo, contact__email="alan@example.org")
    return {
        "dashboard": "/",
        "sequences": "/sequences/",
        "sequence": f"/sequences/{demo.pk}/",
        "enrollment": f"/enrollments/{alan.pk}/",
        "contacts": "/contacts/",
        "contact": f"/contacts/{alan.contact_id}/",
        "mailboxes": "/mailboxes/",
        "replies": "/replies/?status=all",
        "inbound": "/inbound/",
        "operator-log": "/log/",
    }


def png_small(raw: bytes, max_height: int) -> bytes:
    """The top *max_height* pixels as an optimised 256-colour PNG (UI pages have few colours)."""
    from PIL import Image  # noqa: PLC0415 - a test dependency, needed only when the tour is taken

    image = Image.open(io.BytesIO(raw)).convert("RGB")
    if image.height > max_height:
        image = image.crop((0, 0, image.width, max_height))
    out = io.BytesIO()
    image.quantize(colors=COLOURS, method=Image.Quantize.MEDIANCUT).save(out, format="PNG", optimize=True)
    return out.getvalue()


class Command(BaseCommand):
    help = "Take the screenshot tour (docs/tour.md) on an empty database: `scripts/screenshots` runs it."

    def add_arguments(self, parser):
        parser.add_argument("--out", default=str(settings.BASE_DIR / "docs" / "screenshots"))

    def handle(self, *args, out: str, **options):
        if Sequence.objects.exists():
            raise CommandError("the tour starts from the demo data on an empty database, and this one has "
                               "sequences; run `scripts/screenshots`, which uses a temporary one")
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        with SmtpServer(keep_messages=False) as capture:
            os.environ["OUTREACH_CAPTURE_PORT"] = str(capture.port)
            call_command("setup_demo", stdout=io.StringIO())
            long_names_people(long_names_create(smtp_port=capture.port))  # and 50 people in its sequence
        password = secrets.token_urlsafe(16)
        user = get_user_model().objects.create_user("tour", password=password, is_staff=True)
        user.groups.add(Group.objects.get(name="admins"))
        pages = tour_pages()
        server = LiveServerThread("127.0.0.1", StaticFilesHandler)
        server.daemon = True
        server.start()
        server.is_ready.wait()
        if server.error:
            raise CommandError(f"cannot serve the pages: {server.error}")
        try:
            written = self._take(f"http://127.0.0.1:{server.port}", pages, password, folder)
        finally:
            server.terminate()
        total = sum(p.stat().st_size for p in written)
        self.stdout.write(f"{len(written)} screenshots in {folder} ({total / 1024:.0f} KiB)")

    def _take(self, base: str, pages: dict[str, str], password: str, folder: Path) -> list[Path]:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415 - a test dependency, as above

        written = []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                for device, (width, height) in WIDTHS.items():
                    context = browser.new_context(viewport={"width": width, "height": height},
                                                  timezone_id="UTC", locale="en-GB")
                    page = context.new_page()
                    page.goto(f"{base}/login/")
                    page.fill("#id_username", "tour")
                    page.fill("#id_password", password)
                    page.click("#login")
                    page.wait_for_url(f"{base}/")
                    for name, path in pages.items():
                        page.goto(f"{base}{path}")
                        target = folder / f"{name}-{device}.png"
                        target.write_bytes(png_small(page.screenshot(full_page=True), MAX_HEIGHT[device]))
                        written.append(target)
                    context.close()
            finally:
                browser.close()
        return written
