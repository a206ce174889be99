# Fewer indexes written by every inbound row: the mailbox's own (inbound_once_per_uid leads with it) and the
# `_like` indexes of message_id and from_address (see db.sql).

import django.db.models.deletion
from django.db import migrations, models

from db.sql import like_indexes_dropped


class Migration(migrations.Migration):

    dependencies = [
        ('mailboxes', '0011_oauth_auth'),
    ]

    operations = [
        migrations.AlterField(
            model_name='inboundmessage',
            name='mailbox',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT,
                                    related_name='inbound', to='mailboxes.mailbox'),
        ),
        like_indexes_dropped(("mailboxes", "InboundMessage", "message_id"),
                             ("mailboxes", "InboundMessage", "from_address")),
    ]
