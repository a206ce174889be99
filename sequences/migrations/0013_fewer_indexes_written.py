# Fewer indexes written by the send pipeline's moves and events: the enrollment's sequence and the daily
# count's mailbox have none of their own (a composite index leads with each), the timeline's kind index holds
# only the kinds a page finds by kind alone (sequences.models.KINDS_FOUND_BY_KIND), and the `_like` indexes of
# the job's Message-IDs and of the timeline's email go (see db.sql).

import django.db.models.deletion
from django.db import migrations, models

from db.sql import like_indexes_dropped


class Migration(migrations.Migration):

    dependencies = [
        ('mailboxes', '0012_fewer_indexes_written'),
        ('sequences', '0012_contact_email_search_index'),
    ]

    operations = [
        migrations.AlterField(
            model_name='dailysendcount',
            name='mailbox',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name='daily_counts', to='mailboxes.mailbox'),
        ),
        migrations.AlterField(
            model_name='enrollment',
            name='sequence',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT,
                                    related_name='enrollments', to='sequences.sequence'),
        ),
        migrations.AlterField(
            model_name='timelineevent',
            name='kind',
            field=models.CharField(max_length=40),
        ),
        migrations.AddIndex(
            model_name='timelineevent',
            index=models.Index(condition=models.Q(('kind__in', (
                'sequence_paused', 'sequence_resumed', 'mailbox_paused', 'mailbox_resumed', 'suppression_added',
                'suppression_lifted'))), fields=['kind'], name='timelineevent_kind_found_idx'),
        ),
        like_indexes_dropped(("sequences", "SendJob", "message_id"), ("sequences", "SendJob", "provider_message_id"),
                             ("sequences", "TimelineEvent", "email")),
    ]
