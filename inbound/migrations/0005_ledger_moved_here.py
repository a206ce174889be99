"""The inbound ledger, the watchers' leases and processes (from `mailboxes`), the colleague-reply matches and
the data-protection requests (from `sequences`) belong to this app now. Only Django's state moves: every table
keeps its name (`db_table`), its rows, its indexes and its constraints, so nothing is copied or locked.

Their content types are relabelled, so the permissions granted to the roles (`sequences/0002_roles.py`: the
staff's "view inbound message") stay with the groups."""

import importlib

import django.db.models.deletion
from django.db import migrations, models

import db.clock

MOVED = {
    "inboundmessage": "mailboxes",
    "watchlease": "mailboxes",
    "watcherprocess": "mailboxes",
    "replymatch": "sequences",
    "datarequest": "sequences",
}


def content_types_move(apps, schema_editor=None, *, back=False):
    """The moved models' content types (and with them their permissions and the groups holding those) follow
    the models; a content type already made for the new label (a flushed test database) is left as it is."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model, old in MOVED.items():
        source, target = ("inbound", old) if back else (old, "inbound")
        if not ContentType.objects.filter(app_label=target, model=model).exists():
            ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


def content_types_back(apps, schema_editor):
    content_types_move(apps, schema_editor, back=True)


def roles_after_move(apps, schema_editor=None):
    """Each role keeps the moved models' permissions its table (0002) names under their old app: for a database
    whose groups were made after the move (the tests recreate them after a flush)."""
    roles = importlib.import_module("sequences.migrations.0002_roles").ROLES
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    for name, perms in roles.items():
        codenames = [perm.split(".", 1)[1] for perm in perms
                     if perm.split(".", 1)[0] == MOVED.get(perm.rsplit("_", 1)[-1])]
        group = Group.objects.filter(name=name).first()
        if group is not None and codenames:
            group.permissions.add(*Permission.objects.filter(content_type__app_label="inbound",
                                                             codename__in=codenames))


class Migration(migrations.Migration):
    dependencies = [
        ("inbound", "0004_data_requests_and_review"),
        ("mailboxes", "0026_save_to_sent"),
        ("sequences", "0019_unsubscribe_style"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='WatcherProcess',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200, unique=True)),
                        ('started_at', models.DateTimeField(db_default=db.clock.DbClock())),
                        ('expires_at', models.DateTimeField()),
                        ('folders', models.PositiveIntegerField(default=0)),
                    ],
                    options={
                        'db_table': 'mailboxes_watcherprocess',
                    },
                ),
                migrations.CreateModel(
                    name='InboundMessage',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('folder', models.CharField(max_length=255)),
                        ('uidvalidity', models.BigIntegerField()),
                        ('uid', models.BigIntegerField()),
                        ('message_id', models.CharField(blank=True, db_index=True, max_length=998)),
                        ('internaldate', models.DateTimeField(blank=True, null=True)),
                        ('committed_at', models.DateTimeField(db_default=db.clock.DbClock())),
                        ('from_address', models.CharField(blank=True, db_index=True, max_length=320)),
                        ('from_name', models.CharField(blank=True, max_length=400)),
                        ('subject', models.TextField(blank=True)),
                        ('headers', models.JSONField(blank=True, default=dict)),
                        ('size', models.PositiveIntegerField(default=0)),
                        ('kind', models.CharField(choices=[('human_reply', 'Human reply'), ('auto_reply', 'Auto-reply'), ('bounce', 'Bounce'), ('complaint', 'Complaint'), ('unsubscribe_request', 'Unsubscribe request'), ('unrelated', 'Unrelated'), ('auth_failure', 'Authentication failure report'), ('quarantined', 'Quarantined (could not be parsed)')], max_length=24)),
                        ('bounce_type', models.CharField(blank=True, max_length=4)),
                        ('recipients', models.JSONField(blank=True, default=list)),
                        ('status_codes', models.JSONField(blank=True, default=list)),
                        ('classification_reason', models.TextField(blank=True)),
                        ('reply_text', models.TextField(blank=True)),
                        ('correlation_rule', models.CharField(choices=[('in_reply_to', 'In-Reply-To names our Message-ID'), ('references', 'References names our Message-ID'), ('embedded_headers', 'Original headers inside the DSN/ARF'), ('report_recipient', 'Failed or complained-about recipient named in the report'), ('sender_address', 'Sender is an address this mailbox sent to (weaker)'), ('quoted_text', "A colleague at the person's company answers or quotes what we sent"), ('no_evidence', 'No evidence we sent to it'), ('none', 'Not correlated')], default='none', max_length=20)),
                        ('effect', models.TextField(blank=True)),
                        ('raw', models.BinaryField(blank=True)),
                        ('raw_truncated', models.BooleanField(default=False)),
                        ('content', models.CharField(choices=[('full', 'Stored'), ('metadata', 'Not stored: unrelated to anything we sent'), ('purged', 'Content removed after the retention period')], default='full', max_length=10)),
                        ('raw_purged_at', models.DateTimeField(blank=True, null=True)),
                        ('parse_error', models.TextField(blank=True)),
                        ('duplicate_of', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='copies', to='inbound.inboundmessage')),
                        ('enrollment', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='inbound', to='sequences.enrollment')),
                        ('job', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='inbound', to='sequences.sendjob')),
                        ('mailbox', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='inbound', to='mailboxes.mailbox')),
                    ],
                    options={
                        'db_table': 'mailboxes_inboundmessage',
                        'ordering': ['-id'],
                    },
                ),
                migrations.CreateModel(
                    name='DataRequest',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('address', models.CharField(db_index=True, max_length=320)),
                        ('words', models.CharField(max_length=300)),
                        ('received_at', models.DateTimeField()),
                        ('due_on', models.DateField()),
                        ('done_at', models.DateTimeField(blank=True, null=True)),
                        ('done_by', models.CharField(blank=True, max_length=200)),
                        ('outcome', models.CharField(blank=True, max_length=300)),
                        ('created_at', models.DateTimeField(db_default=db.clock.DbClock())),
                        ('inbound', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='inbound.inboundmessage')),
                    ],
                    options={
                        'db_table': 'sequences_datarequest',
                        'ordering': ['due_on', 'id'],
                    },
                ),
                migrations.AlterField(
                    model_name='answer',
                    name='in_reply_to',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='inbound.inboundmessage'),
                ),
                migrations.AlterField(
                    model_name='conversation',
                    name='latest',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='inbound.inboundmessage'),
                ),
                migrations.AlterField(
                    model_name='replylabel',
                    name='inbound',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='inbound.inboundmessage'),
                ),
                migrations.CreateModel(
                    name='ReplyMatch',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('replier', models.CharField(max_length=320)),
                        ('subject_match', models.BooleanField(default=False)),
                        ('quoted_share', models.FloatField(default=0.0)),
                        ('quoted_chars', models.PositiveIntegerField(default=0)),
                        ('why', models.TextField(blank=True)),
                        ('status', models.CharField(choices=[('stopped', 'Stopped on receipt'), ('probable', 'Probable reply: an operator decides'), ('operator_stopped', 'Stopped by an operator'), ('dismissed', 'Dismissed by an operator')], max_length=16)),
                        ('created_at', models.DateTimeField(db_default=db.clock.DbClock())),
                        ('decided_at', models.DateTimeField(blank=True, null=True)),
                        ('decided_by', models.CharField(blank=True, max_length=200)),
                        ('enrollment', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reply_matches', to='sequences.enrollment')),
                        ('inbound', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reply_matches', to='inbound.inboundmessage')),
                        ('job', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reply_matches', to='sequences.sendjob')),
                    ],
                    options={
                        'db_table': 'sequences_replymatch',
                        'ordering': ['-id'],
                    },
                ),
                migrations.CreateModel(
                    name='WatchLease',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('folder', models.CharField(max_length=255)),
                        ('account', models.CharField(max_length=600)),
                        ('holder', models.CharField(blank=True, max_length=200)),
                        ('expires_at', models.DateTimeField(blank=True, null=True)),
                        ('taken_at', models.DateTimeField(blank=True, null=True)),
                        ('term', models.PositiveIntegerField(default=0)),
                        ('mailbox', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='watch_leases', to='mailboxes.mailbox')),
                    ],
                    options={
                        'db_table': 'mailboxes_watchlease',
                    },
                ),
                migrations.AddConstraint(
                    model_name='inboundmessage',
                    constraint=models.UniqueConstraint(fields=('mailbox', 'folder', 'uidvalidity', 'uid'), name='inbound_once_per_uid'),
                ),
                migrations.AddConstraint(
                    model_name='inboundmessage',
                    constraint=models.UniqueConstraint(condition=models.Q(('duplicate_of__isnull', True), models.Q(('message_id', ''), _negated=True)), fields=('mailbox', 'message_id'), name='inbound_acts_once_per_message_id'),
                ),
                migrations.AddIndex(
                    model_name='datarequest',
                    index=models.Index(fields=['done_at', 'due_on'], name='data_request_open'),
                ),
                migrations.AddIndex(
                    model_name='replymatch',
                    index=models.Index(condition=models.Q(('status', 'probable')), fields=['created_at'], name='replymatch_probable_idx'),
                ),
                migrations.AddConstraint(
                    model_name='replymatch',
                    constraint=models.UniqueConstraint(fields=('inbound', 'enrollment'), name='replymatch_once_per_person'),
                ),
                migrations.AddConstraint(
                    model_name='watchlease',
                    constraint=models.UniqueConstraint(fields=('mailbox', 'folder'), name='watchlease_unique_folder'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_move, content_types_back),
        migrations.RunPython(roles_after_move, migrations.RunPython.noop),
    ]
