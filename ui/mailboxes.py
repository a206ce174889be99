"""Operator UI for mailboxes and the inbound ledger (routes in ui/urls.py).

Inbound mail is hostile input: subject, From name, headers and body are shown
as escaped text only; no HTML part is ever rendered and nothing remote loads
(SECURE_CSP in outreach/settings.py). Mailbox secrets never appear: a page says where a secret comes from
("stored encrypted", or the name of its environment variable), never what it is.

The add and edit pages check the connection before saving (no transaction is open across the check); a
password typed there is sealed at once and kept, sealed, in the session until the form is saved.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q
from django.http import QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from db.clock import db_now
from inbound.leases import folders_watching
from inbound.models import InboundMessage
from mailboxes.bound import SECRETS, bind, endpoint
from mailboxes.callback import CALLBACK_PATH
from mailboxes.checks import ConnectionCheck
from mailboxes.models import Mailbox
from mailboxes.sealed import encryption_ready, seal
from mailboxes.secrets import SecretRefused
from mailboxes.selectors import mailbox_secret, secret_source
from mailboxes.signin import (
    PROVIDER_LABELS,
    SigninClient,
    SigninError,
    authorization_request,
    exchange,
    signin_client,
)
from sequences import daily_cap
from sequences.labels import duration_words
from sequences.mailbox_checks import (
    FormCheck,
    check_now_enqueue,
    domain_steps,
    form_check_enqueue,
    form_check_result,
    job_state,
    unsaved_mailbox,
)
from sequences.models import SendJob
from sequences.permissions import MANAGE_MAILBOX_SECRETS, OPERATE, VIEW_INBOUND, VIEW_MAILBOX
from sequences.sending_mailbox import sends_from
from sequences.services import stops
from sequences.services.mailbox_health import mailbox_probe
from sequences.services.mailbox_setup import mailbox_signed_in
from ui import rows, summary
from ui.access import page_of, query_without_page, ui_view
from ui.charts import mailbox_rows
from ui.mailbox_forms import PRESETS, SECRET_FIELDS, SECRET_OF, MailboxForm, form_groups, initial_for

RAW_SHOWN_BYTES = 256 * 1024
NO_WORKER_SECONDS = 15  # a check queued this long without a result: the page asks whether a worker runs


@ui_view(VIEW_MAILBOX)
def mailbox_list(request):
    check, checking = _check_now_shown(request)
    result = summary.result_kept(request, "ui-result:mailbox")
    listed = mailbox_rows(list(Mailbox.objects.prefetch_related("cursors", "sequences").order_by("name")))
    now = db_now()
    watching = folders_watching([m for m, _ in listed])  # IDLE, or polled only (and why) per reply folder
    return render(request, "ui/mailbox_list.html", {
        "mailbox_rows": [(m, view, pace_words(m, now), [(f, watching[m.pk, f]) for f in m.reply_folders
                                                         if (m.pk, f) in watching]) for m, view in listed],
        "can_operate": request.user.has_perm(OPERATE), "result": result, "check": check, "checking": checking,
    })


def pace_words(mailbox: Mailbox, now) -> str:
    """Today's limit (the ramp's figure while it ramps, and the day it reaches the cap) and the spacing."""
    day = daily_cap.cap_day(mailbox, now)
    limit = daily_cap.day_limit(mailbox, day)
    words = f"today {daily_cap.sent_on(mailbox, day)} of {limit} sent"
    if limit < mailbox.daily_cap:
        full = daily_cap.ramp_full_on(mailbox, day)
        words += (f" (ramping up by {mailbox.ramp_step} a day: the full {mailbox.daily_cap} from {full:%a %-d %b})"
                  if full else " (ramping up; a step of 0 never reaches the daily cap)")
    if mailbox.min_gap:
        jitter = f" plus up to {duration_words(mailbox.gap_jitter)}" if mailbox.gap_jitter else ""
        words += f"; messages at least {duration_words(mailbox.min_gap)}{jitter} apart"
    return words


@ui_view(OPERATE, methods=("POST",))
def mailbox_check(request, pk: int):
    """Try every step of sending (no message is sent); a blocked mailbox whose check passes is unblocked. A worker
    runs it (sequences.mailbox_checks); the list waits on it."""
    mailbox = get_object_or_404(Mailbox, pk=pk)
    job_id = check_now_enqueue(mailbox_id=mailbox.pk, actor=request.user.get_username())
    request.session["ui-check-job:mailbox"] = {"job": job_id, "mailbox": mailbox.name}
    return redirect(reverse("mailbox_list") + f"?check={job_id}")


def _check_now_shown(request) -> tuple[dict | None, dict | None]:
    """(the finished check to show, the check still running) for the list page."""
    sent = request.session.get("ui-check-job:mailbox")
    job_id = request.GET.get("check", "")
    if not sent or sent["job"] != job_id:
        return request.session.pop("ui-check:mailbox", None), None
    state, value, waited = job_state(job_id)
    if state == "waiting":
        return None, {"mailbox": sent["mailbox"], "waited": waited, "no_worker": waited > NO_WORKER_SECONDS}
    request.session.pop("ui-check-job:mailbox", None)
    if state != "done":
        return {"mailbox": sent["mailbox"], "steps": [],
                "text": "the check could not finish (the worker stopped, or its result expired): check again"}, None
    return value, None


@ui_view(OPERATE, methods=("GET", "POST"))
def mailbox_pause(request, pk: int):
    mailbox = get_object_or_404(Mailbox, pk=pk)
    if request.method == "POST":
        paused = stops.mailbox_pause(mailbox_id=pk, actor=request.user.get_username())
        done = summary.stop_result(paused, action="pause" if paused.changed else "pause-noop", target=mailbox.name)
        return redirect(reverse("mailbox_list") + summary.result_keep(request, "ui-result:mailbox", done))
    return render(request, "ui/confirm.html", {
        "kind": "mailbox_pause", "object": mailbox, "title": f"Pause mailbox “{mailbox.name}”?",
        "forecast": rows.jobs_forecast(SendJob.objects.filter(sends_from(mailbox.pk, via="enrollment__"))),
        "already": mailbox.paused, "back": reverse("mailbox_list"), "button": "Pause mailbox",
    })


@ui_view(OPERATE, methods=("GET", "POST"))
def mailbox_resume(request, pk: int):
    mailbox = get_object_or_404(Mailbox, pk=pk)
    if request.method == "POST":
        scheduled = stops.mailbox_resume(mailbox_id=pk, actor=request.user.get_username())
        done = {"action": "resume", "target": mailbox.name, "scheduled": scheduled}
        return redirect(reverse("mailbox_list") + summary.result_keep(request, "ui-result:mailbox", done))
    return render(request, "ui/confirm.html", {
        "kind": "mailbox_resume", "object": mailbox, "title": f"Resume mailbox “{mailbox.name}”?",
        "already": not mailbox.paused, "back": reverse("mailbox_list"), "button": "Resume mailbox",
    })


@ui_view(OPERATE, methods=("GET", "POST"))
def mailbox_add(request):
    return _mailbox_form(request, None)


@ui_view(OPERATE, methods=("GET", "POST"))
def mailbox_edit(request, pk: int):
    return _mailbox_form(request, get_object_or_404(Mailbox, pk=pk))


def _mailbox_form(request, mailbox: Mailbox | None):
    """GET: the form (a preset's defaults, or the stored mailbox). POST: check the connection; "save" saves when
    the check passes, "save_anyway" saves whatever it found and leaves the mailbox blocked when it failed.

    The check runs in a worker (sequences.mailbox_checks); the page waits on it (GET ?check=<job>), so no web
    worker waits on a mail server. A stored secret goes only where it was entered for (mailboxes.bound): a
    changed host, port, security, username or token URL asks for it again before anything connects. Only admins
    name password variables and OAuth endpoints."""
    key = f"mailbox-form:{mailbox.pk if mailbox else 'new'}"
    admin = request.user.has_perm(MANAGE_MAILBOX_SECRETS)
    if request.method == "GET" and (job_id := request.GET.get("check", "")):
        return _checked_page(request, mailbox, key, job_id, admin=admin)
    if request.method == "GET":
        request.session.pop(key, None)
        request.session.pop(f"{key}:check", None)
        form = MailboxForm(initial=initial_for(mailbox, request.GET.get("preset", "")), mailbox=mailbox, admin=admin)
        return _form_page(request, form, mailbox, preset_chosen=mailbox is not None or "preset" in request.GET)
    pending = _pending(request, key)
    listed = [name for name in request.POST.get("listed", "").split("\n") if name]
    form = MailboxForm(request.POST, mailbox=mailbox, listed=listed, pending=pending, admin=admin)
    if not form.is_valid():
        return _form_page(request, form, mailbox)
    if form.no_login:
        pending.pop("smtp_password_sealed", None)  # a password typed before "No login to send" was ticked
    candidate = unsaved_mailbox(mailbox, form.column_values())
    if typed := form.typed_secrets():
        if problem := encryption_ready():
            form.add_error(None, f"cannot store a secret: {problem}")
            return _form_page(request, form, mailbox)
        pending.update({column: (seal(secret), endpoint(candidate, SECRET_OF[column]))
                        for column, secret in typed.items()})
        request.session[key] = pending
    _with_secrets(candidate, pending, named_by_admin=admin)
    if form.secrets_asked_again(candidate):
        # Nothing connects: a stored secret was entered for another server.
        return _form_page(request, form, mailbox)
    action = request.POST.get("action", "check")
    job_id = form_check_enqueue(
        mailbox_id=mailbox.pk if mailbox else None, actor=request.user.get_username(),
        action=action if action in ("check", "save", "save_anyway") else "check",
        fields={**form.column_values(), "secret_endpoints": candidate.secret_endpoints},
        sealed={column: token for column, (token, _where) in pending.items() if getattr(candidate, column) == token})
    # What the page shows again once the check is back: the form as sent, never a secret typed on it.
    request.session[f"{key}:check"] = {"job": job_id, "action": action, "listed": listed,
                                       "post": {name: request.POST.getlist(name) for name in request.POST
                                                if name not in SECRET_FIELDS and name != "csrfmiddlewaretoken"}}
    return redirect(f"{request.path}?check={job_id}")


def _checked_page(request, mailbox: Mailbox | None, key: str, job_id: str, *, admin: bool):
    """The page that waits on the check (it reloads itself), then shows what the check found, or the list when
    the job saved the mailbox."""
    sent = request.session.get(f"{key}:check")
    if not sent or sent["job"] != job_id:
        return redirect(request.path)  # not this browser's check, or done with already: the form afresh
    pending = _pending(request, key)
    data = QueryDict(mutable=True)
    for name, values in sent["post"].items():
        data.setlist(name, values)
    found = form_check_result(job_id)
    listed = list(found.check.folders) if found.check and found.check.folders else sent["listed"]
    form = MailboxForm(data, mailbox=mailbox, listed=listed, pending=pending, admin=admin)
    form.is_valid()
    if found.state == "waiting":
        return _form_page(request, form, mailbox, waiting=found, listed=listed)
    request.session.pop(f"{key}:check", None)
    if found.state != "done":
        form.add_error(None, "the connection check could not finish (the worker stopped, or its result expired): "
                             "press Check connection again")
        return _form_page(request, form, mailbox, listed=listed)
    result = found.check
    if found.saved is not None:
        request.session.pop(key, None)
        request.session["ui-check:mailbox"] = {
            "mailbox": Mailbox.objects.get(pk=found.saved).name,
            "text": ("Saved. " if result.passed else "Saved, and blocked until a check passes. ") + result.text,
            "steps": [{"step": f"{part} {s.step}", "ok": s.ok, "detail": s.detail} for part, s in _steps(result)]
            + domain_steps(result.domain),
        }
        return redirect("mailbox_list")
    return _form_page(request, form, mailbox, check=result, listed=listed,
                      offer_anyway=sent["action"] != "check" or not result.passed)


def _pending(request, key: str) -> dict[str, tuple[str, str]]:
    """The secrets typed on earlier rounds of this form: sealed column -> (token, the endpoint it was typed for).
    Anything else the session holds under the key (from an earlier version of the form) is typed again."""
    kept = request.session.get(key, {})
    return {column: tuple(value) for column, value in (kept.items() if isinstance(kept, dict) else ())
            if column in SECRET_OF and isinstance(value, list | tuple) and len(value) == 2}


def _with_secrets(candidate: Mailbox, pending: dict[str, tuple[str, str]], *, named_by_admin: bool) -> None:
    """The secrets typed on this form, each where it was typed for, and, from an admin, the variables named."""
    for column, (token, where) in pending.items():
        which = SECRET_OF[column]
        if where == endpoint(candidate, which):  # one typed for other settings is not used: it is asked for again
            setattr(candidate, column, token)
            bind(candidate, which)
    if named_by_admin:
        for which, (sealed, env) in SECRETS.items():
            if getattr(candidate, env) and not getattr(candidate, sealed):
                bind(candidate, which)


def _steps(result: ConnectionCheck) -> list[tuple[str, object]]:
    return [("SMTP", s) for s in result.sending] + [("IMAP", s) for s in result.reading]


def _form_page(request, form: MailboxForm, mailbox: Mailbox | None, *, check: ConnectionCheck | None = None,
               offer_anyway: bool = False, preset_chosen: bool = True, listed: list[str] | None = None,
               waiting: FormCheck | None = None):
    sources = {}
    if mailbox is not None:
        sources = {which: secret_source(mailbox, which) for which in ("smtp_password", "imap_password")}
    # Settings most mailboxes leave as they are: folded (a phone's page stays short), open where one has an error.
    folded = {"TLS", "Domain authentication", "Pace"}
    shown = [(title, [form[name] for name in names]) for title, names in form_groups()]
    return render(request, "ui/mailbox_form.html", {
        "form": form, "mailbox": mailbox, "presets": PRESETS, "preset_chosen": preset_chosen,
        "groups": [(title, fields, title in folded and not any(field.errors for field in fields))
                   for title, fields in shown],
        "sent_folded": not (form["save_to_sent"].errors or (mailbox and mailbox.sent_copy_error)),
        "check": check, "check_steps": _steps(check) if check else [], "offer_anyway": offer_anyway,
        "waiting": waiting, "no_worker": waiting is not None and waiting.waited > NO_WORKER_SECONDS,
        "listed": "\n".join(listed or []), "sources": sources,
        "signin_label": PROVIDER_LABELS.get(mailbox.oauth2_provider or "generic") if mailbox else "",
    }, status=400 if form.is_bound and form.errors else 200)


@ui_view(OPERATE)
def mailbox_oauth_start(request, pk: int):
    """Off to the provider's consent page (a link, not a form: the page's form-action stays 'self'); the state and
    the PKCE verifier stay in this session, so only the browser that started a sign-in can finish it."""
    mailbox = get_object_or_404(Mailbox, pk=pk)
    try:
        url, state, verifier = authorization_request(_signin_client(mailbox), redirect_uri=_redirect_uri())
    except (SigninError, SecretRefused) as exc:
        request.session["ui-check:mailbox"] = {"mailbox": mailbox.name, "text": f"Sign-in not started: {exc}",
                                               "steps": []}
        return redirect("mailbox_list")
    request.session[f"oauth-signin:{state}"] = {"mailbox": mailbox.pk, "verifier": verifier}
    return redirect(url)


@ui_view(OPERATE)
def mailbox_oauth_callback(request):
    """Back from the consent page: the code for a refresh token (stored encrypted), then a check of the mailbox."""
    state = request.GET.get("state", "")
    pending = request.session.pop(f"oauth-signin:{state}", None) if state else None
    if pending is None:
        return render(request, "ui/mailbox_signin_refused.html", {
            "title": "Sign-in not recognised", "back": reverse("mailbox_list"),
            "message": "This sign-in was not started in this browser session, or it was finished already. "
                       "Start it again from the mailbox's page."}, status=400)
    mailbox = get_object_or_404(Mailbox, pk=pending["mailbox"])
    actor = request.user.get_username()
    try:
        if error := request.GET.get("error", ""):
            raise SigninError(f"the provider answered {error[:100]}: "
                              f"{request.GET.get('error_description', 'consent was not given')[:200]}")
        client = _signin_client(mailbox)
        signed = exchange(client, code=request.GET.get("code", ""), verifier=pending["verifier"],
                          redirect_uri=_redirect_uri())
    except (SigninError, SecretRefused) as exc:
        request.session["ui-check:mailbox"] = {"mailbox": mailbox.name, "text": f"Sign-in failed: {exc}", "steps": []}
        return redirect("mailbox_list")
    # The install's client of a preset is stored on the mailbox with its token: refreshing needs both.
    own_client = not mailbox.oauth2_client_id and client.client_id
    mailbox_signed_in(mailbox_id=mailbox.pk, refresh_sealed=seal(signed.refresh_token), identity=signed.identity,
                      actor=actor, client_id=client.client_id if own_client else "",
                      client_secret_sealed=seal(client.client_secret) if own_client and client.client_secret else "")
    result = mailbox_probe(mailbox_id=mailbox.pk, actor=actor, forced=True)
    request.session["ui-check:mailbox"] = {
        "mailbox": mailbox.name, "text": f"Signed in as {signed.identity}. {result.text}",
        "steps": [{"step": s.step, "ok": s.ok, "detail": s.detail} for s in result.steps]}
    return redirect("mailbox_list")


def _signin_client(mailbox: Mailbox) -> SigninClient:
    return signin_client(provider=mailbox.oauth2_provider or "generic", client_id=mailbox.oauth2_client_id,
                         client_secret=mailbox_secret(mailbox, "oauth2_client_secret") if mailbox.oauth2_client_id
                         else "", authorize_url=mailbox.oauth2_authorize_url, token_url=mailbox.oauth2_token_url,
                         userinfo_url=mailbox.oauth2_userinfo_url, scope=mailbox.oauth2_scope)


def _redirect_uri() -> str:
    return settings.OUTREACH_PUBLIC_URL.rstrip("/") + CALLBACK_PATH


@ui_view(VIEW_INBOUND)
def inbound_list(request):
    q = request.GET.get("q", "").strip()[:400]
    kind = request.GET.get("kind", "")
    qs = InboundMessage.objects.select_related("mailbox", "enrollment__contact").defer("raw").order_by("-id")
    if q:
        bare = q.strip("<>")
        qs = qs.filter(
            Q(from_address__icontains=q) | Q(from_name__icontains=q) | Q(subject__icontains=q)
            | Q(message_id__in=[bare, f"<{bare}>"])
        )
    if kind in InboundMessage.Kind.values:
        qs = qs.filter(kind=kind)
    return render(request, "ui/inbound_list.html", {
        "page": page_of(request, qs), "q": q, "kind": kind, "kinds": InboundMessage.Kind.choices,
        "query": query_without_page(request),
    })


@ui_view(VIEW_INBOUND)
def inbound_detail(request, pk: int):
    message = get_object_or_404(
        InboundMessage.objects.select_related("mailbox", "job", "enrollment__contact", "enrollment__sequence",
                                              "duplicate_of"),
        pk=pk,
    )
    raw = bytes(message.raw or b"")
    return render(request, "ui/inbound_detail.html", {
        "message": message,
        "headers": sorted((message.headers or {}).items()),
        "raw_text": raw[:RAW_SHOWN_BYTES].decode("utf-8", "replace"),
        "raw_cut": len(raw) > RAW_SHOWN_BYTES,
        "raw_size": len(raw),
        "copies": message.copies.order_by("id"),
    })
