"""Every sequence and contact belongs to a workspace; API tokens, suppressions, the timeline's events without a
person and the operator log say theirs (None: an agency token; written outside any workspace). An existing install's
rows go into its one workspace, "Default". A contact is unique per workspace: the same address may be a contact in
two."""

import django.db.models.deletion
from django.db import migrations, models

import workspaces.current


def into_default(apps, schema_editor):
    default, _ = apps.get_model("workspaces", "Workspace").objects.get_or_create(name="Default")
    for model in ("Sequence", "Contact", "ApiToken", "Suppression", "OperatorAction"):
        apps.get_model("sequences", model).objects.update(workspace=default)
    # Events of a person are the workspace's through their enrollment; those without one say it themselves.
    apps.get_model("sequences", "TimelineEvent").objects.filter(enrollment__isnull=True).update(workspace=default)


def nullable():
    return models.ForeignKey(null=True, blank=True, editable=False, on_delete=django.db.models.deletion.PROTECT,
                             related_name="+", to="workspaces.workspace")


def required():
    return models.ForeignKey(default=workspaces.current.workspace_default, editable=False,
                             on_delete=django.db.models.deletion.PROTECT, related_name="+", to="workspaces.workspace")


class Migration(migrations.Migration):
    dependencies = [
        ("sequences", "0022_sequence_crossed_note"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        *(migrations.AddField(model_name=model, name="workspace", field=nullable())
          for model in ("sequence", "contact", "suppression", "timelineevent", "operatoraction")),
        migrations.AddField(
            model_name="apitoken", name="workspace",
            field=models.ForeignKey(null=True, blank=True, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="+", to="workspaces.workspace"),
        ),
        migrations.RunPython(into_default, migrations.RunPython.noop),
        migrations.AlterField(model_name="sequence", name="workspace", field=required()),
        migrations.AlterField(model_name="contact", name="workspace", field=required()),
        migrations.AlterField(model_name="contact", name="email", field=models.EmailField(db_index=True, max_length=254)),
        migrations.AddConstraint(
            model_name="contact",
            constraint=models.UniqueConstraint(fields=("workspace", "email"), name="contact_workspace_email_uniq"),
        ),
    ]
