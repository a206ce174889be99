"""A sequence's name is its workspace's: Acme and Beta each make an "Onboarding" (on the page as members, and with
`load_sequences --workspace`), each member sees and edits its own, and the commands find the one of the workspace
they are told. Without `--workspace` a name two workspaces share is refused in words; a name taken in the same
workspace is refused as before. A mailbox's name stays the install's, and a member is told only that it is taken."""

from __future__ import annotations

import re
from datetime import date

import pytest
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.test import Client

from inbound.models import ReplyRule
from reports.figures import report
from reports.models import DailyFigures
from sequences.ledger import send_ledger_rows
from sequences.models import Enrollment, Sequence, StepVariant, TimelineEvent
from sequences.services.stops import sequence_pause
from sequences.timeline import Event
from tests.factories import MailboxFactory, enroll
from tests.sequences.test_commands import run, write
from tests.ui.conftest import PASSWORD, roles  # noqa: F401 - fixtures
from workspaces.models import Membership, Workspace
from workspaces.scoping import workspace_scope

pytestmark = pytest.mark.django_db(transaction=True)
NAME = "Onboarding"

FILE = """
[[sequence]]
name = "Onboarding"
mailbox = "{box}"

[[sequence.step]]
subject = "Hi {{{{ first_name }}}}"
body = "{body}"
wait = "0s"

[[sequence.on_reply]]
category = "not_interested"
enroll = "Later"
after = "90d"

[[sequence]]
name = "Later"
mailbox = "{box}"

[[sequence.step]]
subject = "Again, {{{{ first_name }}}}"
body = "Checking back"
wait = "0s"
"""


@pytest.fixture
def two(roles):  # noqa: F811 - roles: the groups a membership's role reads
    """Acme and Beta, each with a mailbox and an operator who is a member of it alone."""
    made = {}
    for key, name in (("a", "Acme Corp"), ("b", "Beta Ltd")):
        workspace = Workspace.objects.create(name=name)
        with workspace_scope(workspace.pk):
            mailbox = MailboxFactory(name=f"{key}-box", address=f"sales@{key}-agency.test")
        user = get_user_model().objects.create_user(username=f"{key}-operator", password=PASSWORD)
        Membership.objects.create(user=user, workspace=workspace, role="operator")
        client = Client()
        client.force_login(user)
        made[key] = {"workspace": workspace, "mailbox": mailbox, "client": client, "name": name}
    return made["a"], made["b"]


def create_on_the_page(side: dict, name: str = NAME):
    return side["client"].post("/sequences/new/", {"name": name, "mailbox": side["mailbox"].pk})


def own(side: dict, name: str = NAME) -> Sequence:
    return Sequence._base_manager.get(workspace=side["workspace"], name=name)


def load(tmp_path, side: dict, body: str = "Hello from the file") -> str:
    text = FILE.format(box=side["mailbox"].name, body=body)
    return run("load_sequences", write(tmp_path, f"{side['mailbox'].name}.toml", text), "--workspace", side["name"])


def test_each_member_makes_its_own_onboarding_on_the_page_and_sees_and_edits_only_it(two):
    a, b = two
    for side in (a, b):
        response = create_on_the_page(side)
        assert response.status_code == 302, response.content.decode()[:2000]
    mine_a, mine_b = own(a), own(b)
    assert mine_a.pk != mine_b.pk and (mine_a.mailbox_id, mine_b.mailbox_id) == (a["mailbox"].pk, b["mailbox"].pk)

    listed = b["client"].get("/sequences/").content.decode()
    assert f"/sequences/{mine_b.pk}/" in listed and f"/sequences/{mine_a.pk}/" not in listed
    assert b["client"].get(f"/sequences/{mine_a.pk}/edit/").status_code == 404
    edit = {"name": "Onboarding (EU)", "mailbox": a["mailbox"].pk}
    assert b["client"].post(f"/sequences/{mine_a.pk}/edit/", edit).status_code == 404
    assert a["client"].post(f"/sequences/{mine_a.pk}/edit/", edit).status_code == 302
    assert own(a, "Onboarding (EU)").pk == mine_a.pk and own(b).pk == mine_b.pk
    # Back to the name Beta also uses: Acme's own choice, which Beta's sequence does not stand in the way of.
    assert a["client"].post(f"/sequences/{mine_a.pk}/edit/", edit | {"name": NAME}).status_code == 302
    assert own(a).pk == mine_a.pk


def test_a_name_taken_in_the_same_workspace_is_still_refused_and_says_nothing_of_another(two):
    a, b = two
    assert create_on_the_page(a).status_code == 302
    assert create_on_the_page(b).status_code == 302
    again = create_on_the_page(b)
    assert again.status_code == 400
    page = again.content.decode()
    assert "A sequence named “Onboarding” already exists." in page
    assert "Acme" not in page and "workspace" not in page.lower().replace("workspace-switch", "")
    assert create_on_the_page(b, "Second").status_code == 302
    second = own(b, "Second")
    renamed = b["client"].post(f"/sequences/{second.pk}/edit/", {"name": NAME, "mailbox": b["mailbox"].pk})
    assert renamed.status_code == 400 and "already exists" in renamed.content.decode()
    assert Sequence._base_manager.filter(name=NAME).count() == 2


def test_load_sequences_with_workspace_makes_and_changes_the_workspace_s_own(tmp_path, two):
    a, b = two
    assert "2 created" in load(tmp_path, a)
    assert "2 created" in load(tmp_path, b)
    out = load(tmp_path, b, body="Beta's new text")
    assert "sequence Onboarding step 1: body 'Hello from the file' -> \"Beta's new text\"" in out
    assert own(a).steps.get().body == "Hello from the file"
    assert own(b).steps.get().body == "Beta's new text"
    # Each file's reply rule enrolls in its own workspace's "Later".
    for side in (a, b):
        rule = ReplyRule.objects.get(sequence=own(side))
        assert rule.enroll_in_id == own(side, "Later").pk


def test_commands_with_workspace_pick_the_workspace_s_sequence(tmp_path, two):
    a, b = two
    load(tmp_path, a)
    load(tmp_path, b)
    out = run("pause", "sequence", NAME, "--workspace", b["name"])
    assert "paused sequence Onboarding" in out
    assert (own(a).status, own(b).status) == (Sequence.Status.ACTIVE, Sequence.Status.PAUSED)
    run("resume", "sequence", NAME, "--workspace", b["name"])
    assert own(b).status == Sequence.Status.ACTIVE

    people = write(tmp_path, "people.csv", "email,first_name\nada@prospect.test,Ada\n")
    run("enroll", "--sequence", NAME, people, "--workspace", a["name"])
    assert list(Enrollment.objects.values_list("sequence_id", flat=True)) == [own(a).pk]
    run("pause", "enrollment", "ada@prospect.test", "--sequence", NAME, "--workspace", a["name"])
    assert Enrollment.objects.get().status == Enrollment.Status.PAUSED
    with pytest.raises(CommandError, match="no enrollment 'ada@prospect.test' in sequence 'Onboarding'"):
        run("resume", "enrollment", "ada@prospect.test", "--sequence", NAME, "--workspace", b["name"])

    ledger = run("ledger", "--sequence", NAME, "--workspace", b["name"])
    assert "ada@prospect.test" not in ledger
    assert "ada@prospect.test" in run("ledger", "--sequence", NAME, "--workspace", a["name"])
    assert run("report", "--sequence", NAME, "--workspace", a["name"], "--no-rollup")


def test_without_workspace_a_name_two_workspaces_share_is_refused_in_words(tmp_path, two):
    a, b = two
    load(tmp_path, a)
    load(tmp_path, b)
    people = write(tmp_path, "people.csv", "email\nada@prospect.test\n")
    refused = re.escape("sequence 'Onboarding' is a name in more than one workspace: this install has several "
                        "workspaces: name one with --workspace NAME")
    for args in (("pause", "sequence", NAME), ("resume", "sequence", NAME), ("launch", NAME),
                 ("enroll", "--sequence", NAME, people), ("ledger", "--sequence", NAME),
                 ("report", "--sequence", NAME, "--no-rollup"),
                 ("pause", "enrollment", "ada@prospect.test", "--sequence", NAME)):
        with pytest.raises(CommandError, match=refused):
            run(*args)
    assert (own(a).status, own(b).status) == (Sequence.Status.ACTIVE, Sequence.Status.ACTIVE)
    assert not Enrollment.objects.exists()
    # A file finds its names in one workspace: without one, nothing is read or changed.
    with pytest.raises(CommandError, match="nothing was changed:\n  this install has several workspaces"):
        run("load_sequences", write(tmp_path, "any.toml", FILE.format(box="a-box", body="x")))
    # A name only one workspace has is found without the flag, as before.
    with workspace_scope(a["workspace"].pk):
        Sequence.objects.filter(pk=own(a).pk).update(name="Acme only")
    assert "paused sequence Acme only" in run("pause", "sequence", "Acme only")


def test_a_mailbox_name_of_another_workspace_is_only_not_available(two):
    a, b = two
    form = {"preset": "other", "name": "a-box", "address": "sales@b-agency.test", "auth": "password",
            "smtp_host": "127.0.0.1", "smtp_port": 2525, "smtp_security": "none", "imap_port": 993,
            "imap_security": "tls", "daily_cap": 50, "window_timezone": "UTC"}
    refused = b["client"].post("/mailboxes/new/", form)
    page = refused.content.decode()
    assert refused.status_code == 400 and "this name is not available: choose another" in page
    assert "a-agency" not in page and "Acme" not in page and "exists already" not in page
    own_name = b["client"].post("/mailboxes/new/", form | {"name": "b-box"}).content.decode()
    assert "a mailbox named b-box exists already" in own_name
    assert b["client"].post("/mailboxes/new/", form | {"name": "b-second"}).status_code == 302


def test_an_install_wide_ledger_gives_each_paused_job_its_own_workspace_s_pause(tmp_path, two):
    a, b = two
    load(tmp_path, a)
    load(tmp_path, b)
    for side, actor in ((b, "beta-op"), (a, "acme-op")):  # Beta's pause first: Acme's is the later namesake
        with workspace_scope(side["workspace"].pk):
            enroll(own(side), f"pat@{side['mailbox'].name}.test")
            sequence_pause(sequence_id=own(side).pk, actor=actor)
    pauses = {event.data["actor"]: event.at for event in TimelineEvent.objects.filter(kind=Event.SEQUENCE_PAUSED)}
    rows = {row.contact: row for row in send_ledger_rows(since=own(b).created_at)}  # outside any workspace
    assert rows["pat@b-box.test"].stop_at == pauses["beta-op"]
    assert rows["pat@a-box.test"].stop_at == pauses["acme-op"]


def test_an_install_wide_variant_report_compares_each_workspace_s_step_on_its_own(tmp_path, two):
    a, b = two
    day = date(2026, 3, 2)
    for side, replied in ((a, (30, 0)), (b, (0, 30))):  # A's variant "a" wins in Acme, "b" in Beta
        load(tmp_path, side)
        step = own(side).steps.get()
        for (variant, count) in zip(("a", "b"), replied, strict=True):
            arm = StepVariant.objects.create(step=step, name=variant, subject="Hi", body="Hello")
            DailyFigures.objects.create(day=day, sequence=own(side), step=step, variant=arm,
                                        mailbox=side["mailbox"], sent=100, tried=100, replied=count)
    verdicts = report(by="variant", since=day, until=day).verdicts  # outside any workspace: both of them
    assert sorted(title for title, _ in verdicts) == ["Onboarding (Acme Corp) · step 1",
                                                      "Onboarding (Beta Ltd) · step 1"]
    assert all("unlikely to be chance" in words for _, words in verdicts), verdicts


def test_an_install_wide_report_names_each_namesake_s_workspace_and_a_workspace_s_own_does_not(tmp_path, two):
    a, b = two
    day = date(2026, 3, 2)
    for side in (a, b):
        load(tmp_path, side)
        DailyFigures.objects.create(day=day, sequence=own(side), step=own(side).steps.get(),
                                    mailbox=side["mailbox"], sent=10, tried=10)
    across = report(by="sequence", since=day, until=day)  # outside any workspace: both of them
    assert [line.short for line in across.lines] == ["Onboarding (Acme Corp)", "Onboarding (Beta Ltd)"]
    with workspace_scope(a["workspace"].pk):
        assert [line.short for line in report(by="sequence", since=day, until=day).lines] == ["Onboarding"]


def test_the_admin_adds_a_name_another_workspace_has_and_refuses_one_its_own_has(two):
    a, b = two
    assert create_on_the_page(a).status_code == 302
    admin = get_user_model().objects.create_user(username="b-admin", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=admin, workspace=b["workspace"], role="admin")
    client = Client()
    client.force_login(admin)
    form = {"name": NAME, "mailbox": b["mailbox"].pk, "stop_on_reply": "person", "unsubscribe_style": "headers",
            "booking_url": "", "crossed_note": "Sorry, our messages crossed.", "steps-TOTAL_FORMS": 0,
            "steps-INITIAL_FORMS": 0, "steps-MIN_NUM_FORMS": 0, "steps-MAX_NUM_FORMS": 1000}
    added = client.post("/admin/sequences/sequence/add/", form)
    assert added.status_code == 302, added.content.decode()[:3000]
    assert own(b).pk != own(a).pk
    again = client.post("/admin/sequences/sequence/add/", form)
    assert again.status_code == 200 and "A sequence named “Onboarding” already exists." in again.content.decode()
