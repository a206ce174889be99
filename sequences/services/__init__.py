"""Domain actions, one module per job; import each from the module that owns it
(`from sequences.services.stops import enrollment_stop`).

| module            | what it owns                                                                 |
|-------------------|------------------------------------------------------------------------------|
| `stops`           | the one stop path: stop, pause and resume of enrollments, sequences, mailboxes |
| `suppressions`    | the ledger: add (stops the person everywhere), lift, import                   |
| `enrollments`     | contacts and enrolling them                                                   |
| `scheduling`      | the next step's job, or completion                                            |
| `doctor`          | active enrollments without a live job: explained or repaired                   |
| `sending`         | dispatch, claim, the final check (`send_job_authorize`), the record of a send |
| `mailbox_health`  | a mailbox that fails as a whole: block, hold its jobs, probe, unblock         |
| `provider_cancel` | scheduled sends at a provider and their cancels                               |
| `provider_events` | providers' tracking events                                                    |
| `guardrails`      | a mailbox's hard-bounce and complaint rates: pause when a limit is crossed    |
| `holds`           | an out-of-office answer holds the person's live jobs until their return       |
| `campaigns`       | a sequence built in the UI: create, edit, steps, unsubscribe style, a test send |
| `variants`        | A/B variants of a step: save, stop, and the people a stopped one was given to |
| `contacts`        | one contact at a time: add, edit, enroll                                      |
| `rotation`        | choosing a new enrollment's mailbox from its sequence's pool                  |
| `imap_login`      | what the IMAP server said of a mailbox's credentials, from any connection     |
| `reply_view_episodes` | a mailbox's reply view going blind and reading again: one event each     |
| `domain_auth`     | a mailbox's SPF, DKIM and DMARC: checked, recorded, paused on after a grace   |
| `mailbox_setup`   | mailboxes added and changed from the operator pages, with their sealed secrets |
| `common`          | what every service shares: the refusal error and the operator log            |

Lock order and why: `sequences.locks`. State changes: `sequences.states`. What reaches the inbound ledger lives in
`inbound`: colleagues' replies (`inbound.reply_matches`), data-protection requests (`inbound.data_requests`) and
a person's erasure and export (`inbound.erasure`).
"""
