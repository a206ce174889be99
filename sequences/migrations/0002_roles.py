"""The three roles of the operator UI, as groups with permissions.

- staff: read-only (sequences, enrollments, timelines, incidents, inbound mail,
  the suppression ledger, the operator log).
- operators: staff + `sequences.operate` (pause/resume sequences, enrollments
  and mailboxes; stop an enrollment).
- admins: operators + `sequences.manage_suppressions` (add, lift, import,
  export) + Django admin rights on mailboxes, sequences, steps, contacts and
  users + the django-rq dashboard. Nothing may change or delete the append-only
  tables (timeline, ledger, operator log, inbound messages, provider events):
  the admin classes refuse that even to superusers.

The table is frozen here (a migration must not import app code that changes
later). `roles_create` is idempotent: tests call it again after a transactional
test has flushed the database.
"""

from django.db import migrations

# Permissions that are not model defaults: created here on the model they act on.
CUSTOM = {
    ("sequences", "sequence", "operate"): "Can pause/resume sequences, enrollments and mailboxes and stop enrollments",
    ("sequences", "suppression", "manage_suppressions"): "Can add, lift, import and export suppressions",
}

READ = [
    "sequences.view_contact",
    "sequences.view_sequence",
    "sequences.view_step",
    "sequences.view_enrollment",
    "sequences.view_sendjob",
    "sequences.view_suppression",
    "sequences.view_timelineevent",
    "sequences.view_operatoraction",
    "mailboxes.view_mailbox",
    "mailboxes.view_imapcursor",
    "mailboxes.view_inboundmessage",
    "mailboxes.view_providerevent",
]
OPERATE = ["sequences.operate"]
ADMIN = [
    "sequences.manage_suppressions",
    "sequences.add_contact",
    "sequences.change_contact",
    "sequences.add_sequence",
    "sequences.change_sequence",
    "sequences.add_step",
    "sequences.change_step",
    "mailboxes.add_mailbox",
    "mailboxes.change_mailbox",
    "auth.view_user",
    "auth.add_user",
    "auth.change_user",
    "auth.view_group",
    "django_rq.admin",
]

ROLES = {
    "staff": READ,
    "operators": READ + OPERATE,
    "admins": READ + OPERATE + ADMIN,
}


def roles_create(apps, schema_editor=None):
    from django.contrib.auth.management import create_permissions

    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")

    # Default model permissions are normally created after the last migration
    # (post_migrate); the groups need them now.
    for label in ("auth", "sequences", "mailboxes", "django_rq"):
        try:
            app_config = apps.get_app_config(label)
        except LookupError:
            continue
        # Historical app configs have no models module, and create_permissions
        # skips those; restore it after (this also runs with the live registry).
        original = getattr(app_config, "models_module", None)
        app_config.models_module = original or True
        try:
            create_permissions(app_config, verbosity=0, apps=apps)
        finally:
            app_config.models_module = original

    for (app_label, model, codename), name in CUSTOM.items():
        content_type, _ = ContentType.objects.get_or_create(app_label=app_label, model=model)
        Permission.objects.get_or_create(content_type=content_type, codename=codename, defaults={"name": name})

    wanted = {tuple(perm.split(".", 1)) for perms in ROLES.values() for perm in perms}
    known = {
        (p.content_type.app_label, p.codename): p
        for p in Permission.objects.select_related("content_type").filter(
            content_type__app_label__in={app for app, _ in wanted}, codename__in={code for _, code in wanted}
        )
    }
    for group_name, perms in ROLES.items():
        group, _ = Group.objects.get_or_create(name=group_name)
        # django_rq's permission is absent when that app is not installed.
        group.permissions.set([known[key] for key in (tuple(p.split(".", 1)) for p in perms) if key in known])


def roles_delete(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=list(ROLES)).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("sequences", "0001_initial"),
        ("mailboxes", "0002_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("django_rq", "0003_alter_dashboard_permission_names"),
    ]

    operations = [migrations.RunPython(roles_create, roles_delete)]
