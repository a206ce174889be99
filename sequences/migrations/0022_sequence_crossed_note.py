"""A sequence's note for a follow-up that crossed a person's reply (`crossed_note`): the replies page offers it, one
click, threaded on the reply; never sent automatically."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sequences", "0021_sequence_booking_url"),
    ]

    operations = [
        migrations.AddField(
            model_name="sequence",
            name="crossed_note",
            field=models.CharField(default="Our automatic follow-up crossed your reply — please disregard it.",
                                   max_length=2000),
        ),
    ]
