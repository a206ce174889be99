"""A webhook endpoint hears the events of its workspace (None: the agency's, every workspace's); an existing
install's endpoints go into its one workspace, "Default"."""

import django.db.models.deletion
from django.db import migrations, models

import workspaces.current


def into_default(apps, schema_editor):
    default, _ = apps.get_model("workspaces", "Workspace").objects.get_or_create(name="Default")
    apps.get_model("sequences", "WebhookEndpoint").objects.update(workspace=default)


class Migration(migrations.Migration):
    dependencies = [
        ("sequences", "0023_workspaces"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhookendpoint",
            name="workspace",
            field=models.ForeignKey(blank=True, editable=False, null=True, related_name="+",
                                    on_delete=django.db.models.deletion.PROTECT, to="workspaces.workspace",
                                    default=workspaces.current.workspace_default),
            preserve_default=True,
        ),
        migrations.RunPython(into_default, migrations.RunPython.noop),
    ]
