"""Settings for outreach, read from the environment.

DATABASE_URL  postgres://user:pass@host:port/name (production, tests) or
              sqlite:///path (zero-config local run; default var/outreach.sqlite3)
REDIS_URL     redis://host:port/db (default redis://127.0.0.1:6379/0)
DJANGO_SECRET_KEY  the signing key; unset, the key `scripts/run` keeps in var/secret_key
DEBUG         off unless set to 1 (a developer's explicit choice)
OUTREACH_HTTPS  1 (the default with DEBUG off): Secure cookies, HSTS, redirect to https;
              0 for a plain-http run on loopback (`scripts/run` sets it)
OUTREACH_BEHIND_PROXY  1: trust X-Forwarded-Proto: https and the last X-Forwarded-For address from the reverse proxy
ALLOWED_HOSTS, OUTREACH_PUBLIC_URL
"""

from __future__ import annotations

import os
import secrets as _secrets
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote, urlparse

from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("OUTREACH_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def database_from_url(url: str) -> dict:
    """Turn DATABASE_URL into a Django DATABASES entry (postgres or sqlite only)."""
    parsed = urlparse(url)
    if parsed.scheme in {"postgres", "postgresql"}:
        options = {"server_side_binding": True, "prepare_threshold": 5}
        pooler = os.environ.get("OUTREACH_DB_POOLER", "").strip().lower()
        if pooler not in {"", "session", "transaction"}:
            raise ValueError(f"OUTREACH_DB_POOLER must be empty, session or transaction, got {pooler!r}")
        if pooler == "transaction":
            # Behind a pooler in transaction mode (PgBouncer before 1.21) a statement prepared on one server
            # connection is unknown on the next: prepare none, and no server-side cursor outlives a transaction.
            options["prepare_threshold"] = None
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")) or "outreach",
            "USER": unquote(parsed.username or "postgres"),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": 0,
            # Parameters bound by the server, and a statement run five times on one connection is prepared
            # there (psycopg's prepare_threshold): the send pipeline's joined reads are then planned once
            # per worker, not once per message (the plan was most of their cost).
            "OPTIONS": options,
            "DISABLE_SERVER_SIDE_CURSORS": pooler == "transaction",
            "TEST": {"NAME": os.environ.get("OUTREACH_TEST_DB", None)},
        }
    if parsed.scheme == "sqlite":
        path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else parsed.path
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path,
            # IMMEDIATE takes the write lock at BEGIN, so the authorize
            # transaction and every stop path serialize on SQLite too
            # (select_for_update() is a no-op there).
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    raise ValueError(f"DATABASE_URL must be postgres://... or sqlite:///..., got {url!r}")


DEBUG = env_bool("DEBUG", False)
SECRET_KEY_FILE = VAR_DIR / "secret_key"  # written once by scripts/run, mode 0600


def secret_key() -> str:
    """The key from the environment, else the per-install file; with DEBUG off and neither, refuse to start."""
    key = os.environ.get("DJANGO_SECRET_KEY", "").strip()
    if not key and SECRET_KEY_FILE.is_file():
        key = SECRET_KEY_FILE.read_text().strip()
    if key:
        return key
    if DEBUG:
        # A developer's DEBUG run without scripts/run: a key of this process only, never a known one.
        return _secrets.token_urlsafe(50)
    raise SystemExit(f"outreach: DJANGO_SECRET_KEY is not set and {SECRET_KEY_FILE} does not exist; "
                     "set DJANGO_SECRET_KEY (or start with scripts/run, which generates one)")


SECRET_KEY = secret_key()
ALLOWED_HOSTS = os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    # Before django_rq: its `rqcron` command is outreach's, the scheduler behind a lease (outreach/scheduler.py).
    "outreach",
    "django_rq",
    "anymail",
    "axes",
    "ninja",  # the API docs page serves Swagger UI from ninja's own static files, not a CDN
    "sequences",
    "api",
    "sequences.webhooks_out",
    "mailboxes",
    "workspaces",  # an agency's clients, each sealed from the others: every tenant row belongs to one
    "inbound",
    "meetings",  # bookings from Calendly and Cal.com, above inbound: a booking stops the person like a reply
    "reports",  # the reports' rollups (per day, step, variant, mailbox), read by the UI's reports page
    "ui",  # the operator UI, above the domain apps
    "proving",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Below WhiteNoise: static files keep their own caching; everything else is no-store.
    "outreach.middleware.NoStoreMiddleware",
    "outreach.middleware.RejectInvalidQueryMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "outreach.middleware.SessionTimeoutMiddleware",
    # After the user is known: every view runs in its workspace (a member's, a token's) or refuses tenant queries.
    "outreach.middleware.WorkspaceMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: turns a locked-out login into its lockout page.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out username or address before any password is checked.
    "axes.backends.AxesStandaloneBackend",
    # Django's model permissions, with a workspace member's role in place of its groups (workspaces.membership).
    "workspaces.membership.MembershipBackend",
]

ROOT_URLCONF = "outreach.urls"
WSGI_APPLICATION = "outreach.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
            ],
        },
    },
]

DATABASE_URL = os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'outreach.sqlite3'}")
DATABASES = {"default": database_from_url(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
RQ_QUEUES = {
    name: {"URL": REDIS_URL, "DEFAULT_TIMEOUT": 600}
    for name in ("send", "ingest", "default")
}
# `manage.py rqworker` (scripts/run starts one): RQ's forking worker, each job's module imported before the
# fork (outreach.worker).
# A job queued in a workspace runs in it (outreach.worker.Queue and Worker).
RQ = {"WORKER_CLASS": "outreach.worker.Worker", "QUEUE_CLASS": "outreach.worker.Queue"}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"  # `manage.py collectstatic` fills it for production
# Serve straight from static/ when collectstatic has not run (local run, tests).
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# --- HTTP hardening ------------------------------------------------------
# Inbound mail and contact fields are hostile input: besides autoescaping, every
# page (UI, login, admin, errors, the public unsubscribe page) tells the browser
# to load nothing that is not ours and to run no inline script.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "style-src": [CSP.SELF, CSP.NONCE],
    "script-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
SESSION_COOKIE_HTTPONLY = True
# A login lasts at most this many hours, and ends after this many minutes without a request (outreach.middleware).
OUTREACH_SESSION_MAX_HOURS = int(os.environ.get("OUTREACH_SESSION_MAX_HOURS", "12"))
OUTREACH_SESSION_IDLE_MINUTES = int(os.environ.get("OUTREACH_SESSION_IDLE_MINUTES", "60"))
SESSION_COOKIE_AGE = OUTREACH_SESSION_MAX_HOURS * 3600
CSRF_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# Served over https (the default unless DEBUG): cookies only over https, HSTS, http redirected.
OUTREACH_HTTPS = env_bool("OUTREACH_HTTPS", not DEBUG)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_SSL_REDIRECT = OUTREACH_HTTPS
# A load balancer's or an orchestrator's probe comes over plain http from inside the network: /healthz and
# /healthz/live answer it instead of redirecting (they carry no secret).
SECURE_REDIRECT_EXEMPT = [r"^healthz(/live)?$"]
SECURE_HSTS_SECONDS = int(os.environ.get("OUTREACH_HSTS_SECONDS", "31536000")) if OUTREACH_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("OUTREACH_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("OUTREACH_HSTS_PRELOAD", True)
# Behind a TLS-terminating reverse proxy that sets X-Forwarded-Proto (and strips a client's own).
OUTREACH_BEHIND_PROXY = env_bool("OUTREACH_BEHIND_PROXY", False)
if OUTREACH_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Every way a password is set (the admin, add_user) checks it: at least 12 characters, not a common password,
# not all digits, not close to the user's name or address.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Minutes an admin's re-entered password holds before they change another user's password or role again
# (sequences.admin.reauth).
OUTREACH_REAUTH_MINUTES = int(os.environ.get("OUTREACH_REAUTH_MINUTES", "5"))

# Login throttling (django-axes): a username, or an address, is locked out after
# AXES_FAILURE_LIMIT failed logins, on the UI's login form and the admin's alike.
# Unlock: `python manage.py axes_reset_username NAME`, `axes_reset_ip ADDRESS` or `axes_reset`.
AXES_FAILURE_LIMIT = int(os.environ.get("OUTREACH_LOGIN_FAILURE_LIMIT", "5"))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("OUTREACH_LOGIN_COOLOFF_MINUTES", "60")))
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
# The client address (login lockout, webhook throttle): REMOTE_ADDR; with OUTREACH_BEHIND_PROXY=1, the address
# the proxy appended last to X-Forwarded-For (outreach.middleware.client_address), so that one client's failures
# do not lock everyone out behind the proxy's single address.
AXES_CLIENT_IP_CALLABLE = "outreach.middleware.client_address"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    # The OAuth callback's code and state never reach a log (outreach.secret_queries; gunicorn's access log:
    # outreach.access_log).
    "filters": {"secret_queries": {"()": "outreach.secret_queries.SecretQueryFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "outreach": {"handlers": ["console"], "level": os.environ.get("OUTREACH_LOG_LEVEL", "INFO")},
        # The development server's line per request (scripts/run): at INFO, so the same level governs it.
        "django.server": {"handlers": ["console"], "level": os.environ.get("OUTREACH_LOG_LEVEL", "INFO"),
                          "filters": ["secret_queries"], "propagate": False},
        # A 500 with its traceback, also with DEBUG off (Django's own console handler logs only with DEBUG on).
        "django.request": {"handlers": ["console"], "level": "ERROR"},
    },
}

# --- the install's own mail (weekly reports, notices to users) -----------
# Not a mailbox: mail to the install's users, never to contacts. Unset host: each message is written as a
# file under var/outbox (mailboxes.install_mail), so nothing is lost and nothing leaves.
OUTREACH_INSTALL_MAIL_FROM = os.environ.get("OUTREACH_INSTALL_MAIL_FROM", "outreach@localhost")
OUTREACH_INSTALL_SMTP_HOST = os.environ.get("OUTREACH_INSTALL_SMTP_HOST", "")
OUTREACH_INSTALL_SMTP_PORT = int(os.environ.get("OUTREACH_INSTALL_SMTP_PORT", "587"))
OUTREACH_INSTALL_SMTP_SECURITY = os.environ.get("OUTREACH_INSTALL_SMTP_SECURITY", "starttls")
OUTREACH_INSTALL_SMTP_USERNAME = os.environ.get("OUTREACH_INSTALL_SMTP_USERNAME", "")
OUTREACH_INSTALL_SMTP_PASSWORD = os.environ.get("OUTREACH_INSTALL_SMTP_PASSWORD", "")
OUTREACH_INSTALL_SMTP_CA_FILE = os.environ.get("OUTREACH_INSTALL_SMTP_CA_FILE", "")  # a private CA, PEM
OUTREACH_INSTALL_OUTBOX = Path(os.environ.get("OUTREACH_INSTALL_OUTBOX", VAR_DIR / "outbox"))

# --- outreach behaviour -------------------------------------------------
OUTREACH_PUBLIC_URL = os.environ.get("OUTREACH_PUBLIC_URL", "http://127.0.0.1:8000")
# How long a claim or an authorization is owned by a worker before the
# sweeper considers that worker lost.
OUTREACH_LEASE_SECONDS = int(os.environ.get("OUTREACH_LEASE_SECONDS", "300"))
# Transient SMTP failures are retried this many times, with backoff.
OUTREACH_MAX_ATTEMPTS = int(os.environ.get("OUTREACH_MAX_ATTEMPTS", "5"))
OUTREACH_RETRY_BASE_SECONDS = int(os.environ.get("OUTREACH_RETRY_BASE_SECONDS", "60"))
# A blocked mailbox (authentication, TLS, sender policy, a server that stays unreachable) is probed once
# after each of these intervals in turn (seconds; the last repeats); its jobs wait meanwhile.
OUTREACH_PROBE_INTERVALS = [int(x) for x in os.environ.get("OUTREACH_PROBE_INTERVALS", "60,300,900,3600").split(",")]
# Connection failures in a row (no answer from the server at all) after which the mailbox is blocked.
OUTREACH_CONNECT_FAILURES_TO_BLOCK = int(os.environ.get("OUTREACH_CONNECT_FAILURES_TO_BLOCK", "3"))
# A job that meets a blocked mailbox in the final check waits at least this long before it is tried again.
OUTREACH_BLOCKED_RECHECK_SECONDS = int(os.environ.get("OUTREACH_BLOCKED_RECHECK_SECONDS", "60"))
OUTREACH_SMTP_TIMEOUT = float(os.environ.get("OUTREACH_SMTP_TIMEOUT", "30"))
# Seconds for each step of a connection check (the mailbox form's, `mailbox_check`): shorter than a send's.
OUTREACH_CHECK_TIMEOUT = float(os.environ.get("OUTREACH_CHECK_TIMEOUT", "10"))
# DNS (mailboxes.dns_lookup): the resolver of the domain-authentication check and of address verification,
# "host[:port]" entries comma separated (empty: the system's resolver), and how long one lookup may take.
OUTREACH_DNS_RESOLVER = os.environ.get("OUTREACH_DNS_RESOLVER", "")
OUTREACH_DNS_TIMEOUT = float(os.environ.get("OUTREACH_DNS_TIMEOUT", "5"))
# Hours a mailbox's domain authentication (SPF, DKIM, DMARC) may fail before the guardrail pauses the mailbox.
OUTREACH_DOMAIN_AUTH_GRACE_HOURS = float(os.environ.get("OUTREACH_DOMAIN_AUTH_GRACE_HOURS", "72"))
# The scheduler lease (outreach/scheduler.py): any number of `rqcron` processes run, the one holding the lease
# enqueues. It lives this many seconds unless renewed (every quarter of it); a dead leader's work resumes
# within 1.25 times this.
OUTREACH_SCHEDULER_LEASE_SECONDS = float(os.environ.get("OUTREACH_SCHEDULER_LEASE_SECONDS", "20"))
# Seconds between two dispatcher passes (outreach/cron.py).
OUTREACH_DISPATCH_INTERVAL = int(os.environ.get("OUTREACH_DISPATCH_INTERVAL", "10"))
# /metrics (outreach/metrics.py): off unless set; a scrape sends "Authorization: Bearer <this token>".
OUTREACH_METRICS_TOKEN = os.environ.get("OUTREACH_METRICS_TOKEN", "")
# /healthz (outreach/health.py) says only ok or unavailable, unless a request sends "Authorization: Bearer <this
# token>": then the queues, the scheduler, the watchers and the mailboxes that need a look.
OUTREACH_HEALTH_TOKEN = os.environ.get("OUTREACH_HEALTH_TOKEN", "")
OUTREACH_DISPATCH_BATCH = int(os.environ.get("OUTREACH_DISPATCH_BATCH", "500"))
# Soft bounces in a row that suppress an address.
OUTREACH_SOFT_BOUNCE_LIMIT = int(os.environ.get("OUTREACH_SOFT_BOUNCE_LIMIT", "3"))
# What an auto-reply does to its enrollment: "continue" or "pause".
OUTREACH_AUTO_REPLY_ACTION = os.environ.get("OUTREACH_AUTO_REPLY_ACTION", "continue")
# An out-of-office answer holds the person's live jobs until the day after the return date it states; without a
# date, for this many days. A stated date further out than the maximum holds for the maximum.
OUTREACH_OOO_HOLD_DAYS = int(os.environ.get("OUTREACH_OOO_HOLD_DAYS", "7"))
OUTREACH_OOO_MAX_HOLD_DAYS = int(os.environ.get("OUTREACH_OOO_MAX_HOLD_DAYS", "90"))
# The key of the hashed ledger of erased addresses (HMAC-SHA256). Unset: derived from SECRET_KEY, which then must
# never be rotated without re-keying the ledger; set it to keep the two apart.
# OUTREACH_SECRET_ERASURE_KEY is its earlier name, still read; no mailbox may name either (mailboxes.secrets).
OUTREACH_ERASURE_KEY = os.environ.get("OUTREACH_ERASURE_KEY") or os.environ.get("OUTREACH_SECRET_ERASURE_KEY", "")
OUTREACH_IMAP_TIMEOUT = float(os.environ.get("OUTREACH_IMAP_TIMEOUT", "30"))
OUTREACH_POLL_INTERVAL = int(os.environ.get("OUTREACH_POLL_INTERVAL", "30"))
# The reply view: how old a mailbox's replies-read-through time may be when a follow-up is authorized, and how
# soon a follow-up held for it (unread mail, a stale view) goes back through the final check.
OUTREACH_REPLY_VIEW_MAX_AGE = int(os.environ.get("OUTREACH_REPLY_VIEW_MAX_AGE", "600"))
OUTREACH_REPLY_VIEW_RECHECK_SECONDS = int(os.environ.get("OUTREACH_REPLY_VIEW_RECHECK_SECONDS", "10"))
# IMAP connections the IDLE watcher opens at once (login and SELECT of a folder it starts watching).
OUTREACH_WATCHER_OPENERS = int(os.environ.get("OUTREACH_WATCHER_OPENERS", "4"))
# Watcher processes share the folders through leases in the database (inbound.leases): a lease lives this many
# seconds unless its holder renews it, so a dead watcher's folders are watched again within about 1.3 leases.
OUTREACH_WATCHER_LEASE_SECONDS = float(os.environ.get("OUTREACH_WATCHER_LEASE_SECONDS", "15"))
# Seconds between the watcher's heartbeats on each folder (DONE, NOOP, IDLE): each answered one that shows nothing
# beyond the folder's cursor moves its replies-read-through time to when it was sent. 0: only the re-check does.
OUTREACH_WATCHER_HEARTBEAT_SECONDS = float(os.environ.get("OUTREACH_WATCHER_HEARTBEAT_SECONDS", "5"))
# Connections an IMAP server allows one account (host and login) where inbound.leases knows no figure of its own
# (Dovecot's mail_max_userip_connections: 10); the watchers hold all but two of them, which stay for the polls.
OUTREACH_IMAP_MAX_CONNECTIONS_PER_ACCOUNT = int(os.environ.get("OUTREACH_IMAP_MAX_CONNECTIONS_PER_ACCOUNT", "10"))
# Per-server connection limits, overriding the known ones and the above: "imap.example.com=20,mail.corp.test=5".
OUTREACH_IMAP_CONNECTION_LIMITS = os.environ.get("OUTREACH_IMAP_CONNECTION_LIMITS", "")
OUTREACH_INBOUND_RAW_LIMIT = int(os.environ.get("OUTREACH_INBOUND_RAW_LIMIT", str(2 * 1024 * 1024)))
# Bytes of one message read from IMAP (a partial fetch): enough for any DSN, ARF or reply; memory stays flat.
OUTREACH_INBOUND_FETCH_LIMIT = int(os.environ.get("OUTREACH_INBOUND_FETCH_LIMIT", str(10 * 1024 * 1024)))
# Days the raw source of correlated or machine-generated inbound mail is kept; then a periodic job removes it.
OUTREACH_INBOUND_RETENTION_DAYS = int(os.environ.get("OUTREACH_INBOUND_RETENTION_DAYS", "90"))

# --- providers and public endpoints ---------------------------
# ESP tracking webhooks require HTTP basic auth: OUTREACH_WEBHOOK_SECRET is
# "user:password", the same string configured in the ESP's webhook URL
# (https://user:password@host/webhooks/anymail/<esp>/tracking/). Unset, a
# random secret nobody knows is used, so the webhooks refuse every request
# instead of accepting anyone's.
# ESPs whose tracking webhooks are mounted; each must be fully configured (a system check refuses to start otherwise).
OUTREACH_WEBHOOK_ESPS = [esp.strip() for esp in os.environ.get("OUTREACH_WEBHOOK_ESPS", "sendgrid,brevo").split(",")
                         if esp.strip()]
# Failed webhook logins one client address may make in 10 minutes before it gets 429 until the 10 minutes end.
OUTREACH_WEBHOOK_AUTH_FAILURE_LIMIT = int(os.environ.get("OUTREACH_WEBHOOK_AUTH_FAILURE_LIMIT", "20"))
# Private, loopback or link-local targets the server may connect to on an operator's word (mailboxes.targets):
# host names or networks (CIDR), comma separated. Outbound webhooks and OAuth endpoints are otherwise https to
# public addresses only; mail hosts may be private but never link-local or a cloud metadata address.
OUTREACH_ALLOW_PRIVATE_TARGETS = [t.strip() for t in os.environ.get("OUTREACH_ALLOW_PRIVATE_TARGETS", "").split(",")
                                  if t.strip()]
# Directories a mailbox's private CA file (ca_file) may be read from.
OUTREACH_CA_DIRS = [d.strip() for d in os.environ.get(
    "OUTREACH_CA_DIRS", f"{VAR_DIR / 'ca'},/etc/ssl/certs,/usr/local/share/ca-certificates").split(",") if d.strip()]
# The ports a mail host not listed in OUTREACH_ALLOW_PRIVATE_TARGETS may be reached on ("any": every port).
_mail_ports = os.environ.get("OUTREACH_MAIL_PORTS", "25,465,587,2525,143,993").strip()
OUTREACH_MAIL_PORTS = None if _mail_ports == "any" else [int(p) for p in _mail_ports.split(",") if p.strip()]
# Mailbox secret env var names allowed besides OUTREACH_SECRET_* (mailboxes/secrets.py).
OUTREACH_SECRET_ENV_ALLOW = [n.strip() for n in os.environ.get("OUTREACH_SECRET_ENV_ALLOW", "").split(",") if n.strip()]

ANYMAIL = {
    "WEBHOOK_SECRET": os.environ.get("OUTREACH_WEBHOOK_SECRET") or f"unset:{_secrets.token_urlsafe(32)}",
    # Seconds to wait for an ESP's answer to a hand-off or a cancel; past it the outcome is unknown.
    "REQUESTS_TIMEOUT": float(os.environ.get("OUTREACH_ESP_TIMEOUT", "30")),
}
