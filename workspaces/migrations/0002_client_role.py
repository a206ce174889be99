"""The client role: a workspace member who reads its results, replies and reports and changes nothing. Its group,
"clients", holds the view permissions of the sequences (dashboard, sequences, reports and their exports, a step's
preview) and of the inbound mail (the replies inbox, the inbound list); none of a contact's page, send ledger or
export, and nothing that acts. `client_role_create` is idempotent: tests call it again after a flush."""

from django.db import migrations

PERMS = [("sequences", "view_sequence"), ("sequences", "view_step"), ("inbound", "view_inboundmessage")]


def client_role_create(apps, schema_editor=None):
    from django.contrib.auth.management import create_permissions

    for label in ("sequences", "inbound"):
        app_config = apps.get_app_config(label)
        original = getattr(app_config, "models_module", None)
        app_config.models_module = original or True
        try:
            create_permissions(app_config, verbosity=0, apps=apps)
        finally:
            app_config.models_module = original
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    group, _ = Group.objects.get_or_create(name="clients")
    for app_label, codename in PERMS:
        found = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
        if found is not None:
            group.permissions.add(found)


def client_role_delete(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="clients").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0001_initial"),
        ("inbound", "0007_reply_rules"),
        ("sequences", "0024_webhook_endpoint_workspace"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(client_role_create, client_role_delete)]
