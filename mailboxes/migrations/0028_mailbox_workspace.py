"""Every mailbox belongs to a workspace: an existing install's go into its one workspace, "Default"."""

import django.db.models.deletion
from django.db import migrations, models

import workspaces.current


def into_default(apps, schema_editor):
    default, _ = apps.get_model("workspaces", "Workspace").objects.get_or_create(name="Default")
    apps.get_model("mailboxes", "Mailbox").objects.update(workspace=default)


class Migration(migrations.Migration):
    dependencies = [
        ("mailboxes", "0027_inbound_ledger_moved"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="mailbox",
            name="workspace",
            field=models.ForeignKey(null=True, editable=False, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="+", to="workspaces.workspace"),
        ),
        migrations.RunPython(into_default, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="mailbox",
            name="workspace",
            field=models.ForeignKey(default=workspaces.current.workspace_default, editable=False,
                                    on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                    to="workspaces.workspace"),
        ),
    ]
