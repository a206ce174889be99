import re

from django.db import migrations, models

ENROLLMENT = re.compile(r"^enrollment (\d+)$")


def targets_from_words(apps, schema_editor):
    """Earlier log rows named their target in words only: link what the words identify."""
    OperatorAction = apps.get_model("sequences", "OperatorAction")
    Sequence = apps.get_model("sequences", "Sequence")
    Mailbox = apps.get_model("mailboxes", "Mailbox")
    sequences = dict(Sequence.objects.values_list("name", "pk"))
    mailboxes = dict(Mailbox.objects.values_list("name", "pk"))
    for row in OperatorAction.objects.filter(target_kind="").iterator():
        kind, pk = "", None
        if match := ENROLLMENT.match(row.target):
            kind, pk = "enrollment", int(match.group(1))
        elif row.action.startswith("enrollment_"):
            kind = "enrollment"
        elif row.target.startswith("sequence "):
            kind, pk = "sequence", sequences.get(row.target.removeprefix("sequence "))
        elif row.target.startswith("mailbox "):
            kind, pk = "mailbox", mailboxes.get(row.target.removeprefix("mailbox "))
        elif row.action.startswith("suppression_"):
            kind = "suppression"
        if kind:
            OperatorAction.objects.filter(pk=row.pk).update(target_kind=kind, target_id=pk)


class Migration(migrations.Migration):

    dependencies = [
        ('sequences', '0004_provider_cancel_frees_the_step'),
        ('mailboxes', '0003_correlation_rule_recipient'),
    ]

    operations = [
        migrations.AddField(
            model_name='operatoraction',
            name='target_id',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='operatoraction',
            name='target_kind',
            field=models.CharField(blank=True, choices=[('enrollment', 'Enrollment'), ('sequence', 'Sequence'), ('mailbox', 'Mailbox'), ('suppression', 'Suppression')], max_length=12),
        ),
        migrations.RunPython(targets_from_words, migrations.RunPython.noop),
    ]
