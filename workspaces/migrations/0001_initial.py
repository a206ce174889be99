"""Workspaces and memberships; an existing install becomes the one workspace "Default" (its rows are moved into it
by each app's own migration)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import db.clock


def default_create(apps, schema_editor):
    apps.get_model("workspaces", "Workspace").objects.get_or_create(name="Default")


class Migration(migrations.Migration):
    initial = True

    dependencies = [migrations.swappable_dependency(settings.AUTH_USER_MODEL)]

    operations = [
        migrations.CreateModel(
            name="Workspace",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=100, unique=True)),
                ("created_at", models.DateTimeField(db_default=db.clock.DbClock())),
            ],
            options={"ordering": ["name"]},
        ),
        migrations.CreateModel(
            name="Membership",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("role", models.CharField(choices=[("admin", "Admin"), ("operator", "Operator"),
                                                   ("staff", "Staff (read only)"),
                                                   ("client", "Client (results and replies, read only)")],
                                          max_length=10)),
                ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="memberships",
                                           to=settings.AUTH_USER_MODEL)),
                ("workspace", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                related_name="memberships", to="workspaces.workspace")),
            ],
            options={"ordering": ["workspace__name"]},
        ),
        migrations.AddConstraint(
            model_name="membership",
            constraint=models.UniqueConstraint(fields=("user", "workspace"), name="membership_user_workspace_uniq"),
        ),
        migrations.RunPython(default_create, migrations.RunPython.noop),
    ]
