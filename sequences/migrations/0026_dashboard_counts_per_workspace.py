"""The dashboard's kept count is one row per workspace; the one row an install kept before is its workspace
"Default"'s (every existing row went there, workspaces/0001)."""

import django.db.models.deletion
from django.db import migrations, models


def into_default(apps, schema_editor):
    """The kept row becomes Default's; with no workspace of that name it is dropped (the next count makes each
    workspace's)."""
    kept = apps.get_model("sequences", "DashboardCounts").objects.filter(workspace__isnull=True).order_by("pk")
    default = apps.get_model("workspaces", "Workspace").objects.filter(name="Default").first()
    first = kept.first()
    if first is not None and default is not None:
        kept.exclude(pk=first.pk).delete()
        kept.filter(pk=first.pk).update(workspace=default)
    else:
        kept.delete()


class Migration(migrations.Migration):

    dependencies = [
        ('sequences', '0025_stop_reason_rule_undone'),
        ('workspaces', '0002_client_role'),
    ]

    operations = [
        migrations.AddField(
            model_name='dashboardcounts',
            name='workspace',
            field=models.OneToOneField(null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='workspaces.workspace'),
        ),
        migrations.RunPython(into_default, migrations.RunPython.noop),
    ]
