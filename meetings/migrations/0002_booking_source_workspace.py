"""A booking source stops the people of its workspace, and its bookings are that workspace's; an existing install's
sources and bookings go into "Default"."""

import django.db.models.deletion
from django.db import migrations, models

import workspaces.current


def into_default(apps, schema_editor):
    default, _ = apps.get_model("workspaces", "Workspace").objects.get_or_create(name="Default")
    apps.get_model("meetings", "BookingSource").objects.update(workspace=default)
    apps.get_model("meetings", "BookingEvent").objects.update(workspace=default)


class Migration(migrations.Migration):
    dependencies = [
        ("meetings", "0001_initial"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="bookingsource",
            name="workspace",
            field=models.ForeignKey(null=True, editable=False, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="+", to="workspaces.workspace"),
        ),
        migrations.AddField(
            model_name="bookingevent",
            name="workspace",
            field=models.ForeignKey(null=True, blank=True, editable=False,
                                    on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                    to="workspaces.workspace"),
        ),
        migrations.RunPython(into_default, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="bookingsource",
            name="workspace",
            field=models.ForeignKey(default=workspaces.current.workspace_default, editable=False,
                                    on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                    to="workspaces.workspace"),
        ),
    ]
