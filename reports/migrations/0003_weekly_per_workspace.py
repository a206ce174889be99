"""Each workspace has its own weekly report: its recipients and its weeks. What an install chose and sent before
goes into its workspace "Default" (the one every existing row went into, workspaces/0001)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import workspaces.current


def into_default(apps, schema_editor):
    default, _ = apps.get_model("workspaces", "Workspace").objects.get_or_create(name="Default")
    for model in ("WeeklyReportRecipient", "WeeklyReportWeek"):
        apps.get_model("reports", model).objects.update(workspace=default)


class Migration(migrations.Migration):

    dependencies = [
        ('reports', '0002_weekly_report'),
        ('workspaces', '0002_client_role'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='weeklyreportweek',
            name='weeklyreportweek_once',
        ),
        migrations.AddField(
            model_name='weeklyreportrecipient',
            name='workspace',
            field=models.ForeignKey(null=True, editable=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='workspaces.workspace'),
        ),
        migrations.AddField(
            model_name='weeklyreportweek',
            name='workspace',
            field=models.ForeignKey(null=True, editable=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='workspaces.workspace'),
        ),
        migrations.RunPython(into_default, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='weeklyreportrecipient',
            name='workspace',
            field=models.ForeignKey(default=workspaces.current.workspace_default, editable=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='workspaces.workspace'),
        ),
        migrations.AlterField(
            model_name='weeklyreportweek',
            name='workspace',
            field=models.ForeignKey(default=workspaces.current.workspace_default, editable=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='workspaces.workspace'),
        ),
        migrations.AlterField(
            model_name='weeklyreportrecipient',
            name='user',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddConstraint(
            model_name='weeklyreportrecipient',
            constraint=models.UniqueConstraint(fields=('workspace', 'user'), name='weeklyreportrecipient_once'),
        ),
        migrations.AddConstraint(
            model_name='weeklyreportweek',
            constraint=models.UniqueConstraint(fields=('workspace', 'week'), name='weeklyreportweek_once'),
        ),
    ]
