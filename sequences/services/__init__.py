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
| `erasure`         | erase a person (a keyed hash of the address stays) and export what is held    |
| `campaigns`       | building a sequence in the UI: create, edit, steps, a test send to oneself   |

Lock order and why: `sequences.locks`. State changes: `sequences.states`.
"""
