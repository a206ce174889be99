"""The opt-out guard (inbound.classify.optout): requests to stop and data-protection demands in the words people
really write suppress the address when the reply is recorded, and near misses do not.

A real reply in a real Dovecot mailbox, polled by ingestion, for the suppression; the wording itself without a
database.
"""

from __future__ import annotations

import re
from email.message import EmailMessage

import pytest

from inbound.classify import classify
from inbound.classify.intent import Category, suggest
from inbound.classify.reply import demand_words
from inbound.classify.someone_else import said_of_another
from inbound.classify.stop_wording import unsubscribe_phrase
from inbound.kinds import Kind
from inbound.models import InboundMessage
from proving.harness import mails
from sequences.models import Enrollment, Suppression
from tests.inbound.test_ingest import poll, send_first_step

DSGVO_ERASURE = (
    "Sehr geehrte Damen und Herren,\n\n"
    "gemäß Art. 17 DSGVO fordere ich Sie auf, sämtliche zu meiner Person gespeicherten Daten unverzüglich zu "
    "löschen und mir die Löschung schriftlich zu bestätigen.\n\nMit freundlichen Grüßen\nJ. Weber"
)


def message(text: str, *, to_message_id: str = "<step1.enr9.d00d@outreach.example>",
            sender: str = "ada@example.com") -> bytes:
    msg = EmailMessage()
    msg["From"] = f"Ada <{sender}>"
    msg["To"] = mails.OURS
    msg["Subject"] = "Re: Hello Ada"
    msg["Message-ID"] = mails.new_id()
    msg["In-Reply-To"] = msg["References"] = to_message_id
    msg.set_content(text)  # UTF-8, as a mail client sends German text
    return msg.as_bytes()


@pytest.mark.django_db(transaction=True)
def test_a_german_dsgvo_erasure_reply_suppresses_the_address_when_recorded(imap_mailbox, dovecot):
    enrollment, job = send_first_step(imap_mailbox, email="weber@example.de")
    dovecot.append("alice", "INBOX", message(DSGVO_ERASURE, to_message_id=job.message_id, sender="weber@example.de"))

    assert poll(imap_mailbox).folders["INBOX"]["recorded"] == 1

    row = InboundMessage.objects.get()
    assert (row.kind, row.job_id) == (Kind.UNSUBSCRIBE_REQUEST, job.pk)
    assert row.classification_reason.startswith("data-protection request"), row.classification_reason
    suppression = Suppression.objects.get(value="weber@example.de")
    assert suppression.reason == Suppression.Reason.UNSUBSCRIBE
    enrollment.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == (Enrollment.Status.STOPPED, "unsubscribed")


@pytest.mark.django_db(transaction=True)
def test_a_misspelt_request_suppresses_the_address_when_recorded(imap_mailbox, dovecot):
    _, job = send_first_step(imap_mailbox, email="fleet@example.com")
    dovecot.append("alice", "INBOX", message("pls unsubscibe me, not a fleet company",
                                             to_message_id=job.message_id, sender="fleet@example.com"))

    poll(imap_mailbox)

    assert Suppression.objects.get(value="fleet@example.com").reason == Suppression.Reason.UNSUBSCRIBE


# What people wrote that the phrase tables missed (issue 41's scoring), and more of the same in each language.
OPT_OUTS = [
    "pls unsubscibe me, not a fleet company",
    "Lose my email address please. Ta.",
    "Thanks, not interested. Please don't email again.",
    "Buenos días: solicito la baja de su lista y la supresión de mis datos conforme al RGPD.",
    DSGVO_ERASURE,
    "Under Article 17 of the GDPR I request the erasure of all personal data you hold about me.",
    "Bitte austragen!!",
    "Stop. Je ne veux plus de mails.",
    "Smettete di scrivermi per favore.",
    "Ik wil geen mails meer ontvangen.",
    "Parem de me enviar emails.",
    "Proszę przestać do mnie pisać.",
    "Where did you get my email address?",
    "Op grond van de AVG verzoek ik om verwijdering van mijn persoonsgegevens.",
    # Passive wishes to be taken off, in each language.
    "I'd like to be removed from your mailing list, please.",
    "Ich möchte aus Ihrem Verteiler entfernt werden.",
    "Serait-il possible d'être retiré de vos envois ?",
    "Gostaria de ser removido da vossa lista de distribuição.",
    "Zou ik van uw verzendlijst gehaald kunnen worden?",
    "Chciałbym zostać usunięty z Państwa listy mailingowej.",
    # Wording the tables missed: follow-ups, a stopped dispatch, a missing accent, one's own address named.
    "Not interested, sorry. Please don't send any more follow-ups.",
    "Bitte stellen Sie den Versand an mich ein.",
    "Je ne suis pas client. Ne me contactez plus.",
    "eliminenme porfavor",
    "Haal me alstublieft van de lijst.",
    "Removam contato@marcenaria-example.com.br de todos os envios futuros.",
    "Olvídense de mi correo, por favor.",
    "Vi prego di astenervi dallo scrivermi in futuro.",
    "Nie jestem zainteresowany i wolałbym, żeby Pan już nie pisał.",
    "NO MORE.",
    # The same request in every language: the next follow-up spared, a domain blocked, the whole team stopped.
    "Spare yourself the next follow-up, the answer won't change.",
    "Block our domain on your side, nobody here wants these.",
    "Please stop for the whole team - we've had the same email at four addresses.",
    # Consent withdrawn, a wish for the last one, more counted, consent challenged, the spam folder threatened.
    "Withdraw my consent. I never gave it in the first place.",
    "Retiro mi consentimiento para cualquier comunicación comercial.",
    "I would be very grateful if this was the last message. Have a nice week!",
    "Le sarei grato se questa fosse l'ultima comunicazione.",
    "Ile jeszcze takich maili zamierzacie mi wysłać?",
    "Wie viele von denen wollen Sie mir eigentlich noch schicken?",
    "Wer hat Ihnen erlaubt, mich anzuschreiben?",
    "Next one goes straight to the spam folder. Just so you know.",
    "Volgende keer gaat u rechtstreeks het spamfilter in.",
    "DOŚĆ TEGO SPAMU!!!",
    # Ceasing and sending no more, in the words of offices and phones.
    "Prosimy o zaprzestanie przesyłania korespondencji handlowej na ten adres.",
    "Por la presente se solicita cesar el envío de correos publicitarios a esta dirección.",
    "Nie przesyłajcie nam więcej ofert. Dziękujemy.",
    "nao tenho interesse, nao mandem mais",
    "Servus, bitte schicken S' mir nix mehr.",
    "Geen interesse, en stuur me alsjeblieft ook niets meer.",
    "stp arrete de m envoyer ca",
    "pas intéressé. ne me recontactez pas.",
    "Please kill the sequence, I'm not reading them.",
    "Request you to kindly block my email id from your system.",
    "Hey, danke, aber bitte nimm mich von der Liste.",
    "Si je suis intéressé un jour, je vous contacterai. D'ici là, plus rien s'il vous plaît.",
    "Pá, deixa-me em paz com isso das faturas.",
    "Rezygnuję z newslettera",
    "Please don't circle back again.",
    "Thanks but no thanks. Would also appreciate not being chased on this.",
    "Love the persistence, hate the emails. Let's end it here, shall we?",
    "Can you block northgate-example.co.uk on your side? None of our staff want these.",
    "Mówiłem już waszemu koledze. Teraz pan. Przestańcie wszyscy.",
    "Wie werde ich Sie eigentlich wieder los?",
    # A mistake, or a return refused, is no wish to be put back.
    "Please unsubscribe me, I was added by mistake.",
    "Do not re-add me to your list. Remove me.",
    "Je vous remets en copie mon collègue. Merci de me retirer de votre liste.",
    "Stop sending me invitations to webinars I never booked.",
]

DATA_REQUESTS = [OPT_OUTS[3], DSGVO_ERASURE, OPT_OUTS[5], OPT_OUTS[12], OPT_OUTS[13]]

NEAR_MISSES = [
    "Please don't remove me, I'm interested. Pricing?",
    "How do I unsubscribe my team from the Acme digest?",
    "Wie kann ich meine Kunden aus Ihrem System abmelden?",
    "Comment mes clients peuvent-ils se désinscrire de vos notifications ?",
    "Unsubscribe rates are our biggest headache. Can you help with that?",
    "Are you GDPR compliant? We'd need a DPA first.",
    "Does your tool handle GDPR deletion requests from our customers?",
    "Niet uitschrijven hoor, ik ben geïnteresseerd.",
    "Proszę mnie nie wypisywać, jestem zainteresowany.",
    "No borren mis datos, me interesa seguir en contacto.",
    "Ne supprimez pas mon adresse, je suis intéressé.",
    "We want to stop using spreadsheets for this. Demo?",
    "Pas d'inquiétude, je ne cherche pas à me désinscrire : je signale juste une coquille dans l'objet.",
    "¿Cómo puedo dar de baja a mi equipo del boletín de Holded? Ya que trabajáis en esto, quizá lo sepáis.",
    "Comment désinscrire toute mon équipe de la newsletter de Qonto ?",
    # Negated after the verb (German, Dutch) or with "no need" in the other languages.
    "Bitte tragen Sie mich nicht aus, ich antworte nur spät.",
    "Nehmen Sie mich bitte nicht aus dem Verteiler, ich lese alles.",
    "Nein danke, wir sind versorgt. Austragen müssen Sie mich aber nicht.",
    "Nee dank u, we zijn voorzien. Afmelden hoeft niet, hoor.",
    "Non merci, nous sommes équipés. Pas besoin de me retirer de la liste pour autant.",
    "No es necesario darme de baja, simplemente ahora no lo necesito.",
    "¡Nada de darme de baja! Envíenme el caso de éxito, por favor.",
    "Non serve disiscrivermi, semplicemente ora non mi serve.",
    "Não é preciso descadastrar-me, simplesmente agora não preciso disto.",
    "Nie ma potrzeby mnie wypisywać, po prostu teraz tego nie potrzebuję.",
    "Remove me? No need - just send the price list.",
    "Don't worry, I'm not going to unsubscribe - I just wanted to say the video link is broken.",
    # Someone else taken off, by name or pronoun: a referral.
    "Please remove Anna Berg from your list, she left in March. Tom Hale runs procurement now.",
    "Maria left the company. Please take her off your list and write to Tom Hale instead.",
    "Bitte streichen Sie Frau Roth aus dem Verteiler, sie ist in Rente. Zuständig ist Herr Klein.",
    # A scheduling detail, an old address or the thread at hand.
    "Stop sending me time slots, ha - I've booked Thursday 11am via your link. See you then.",
    "Arrêtez de m'envoyer des créneaux, j'ai réservé jeudi 11h via votre lien. À jeudi !",
    "Interested - but please delete my old address j.king@oldco-example.com and use this one.",
    "Please take me off this thread and loop in my colleague Ben Ortiz, he handles procurement.",
    # Others, a topic, a link.
    "Wie können sich unsere Schüler von den Benachrichtigungen Ihres Systems abmelden?",
    "Come gestisce il vostro strumento le disiscrizioni dei nostri clienti? Per noi è indispensabile.",
    "Il vostro link di disiscrizione dà errore 404. Non voglio disiscrivermi, ve lo segnalo e basta.",
    "Does your platform handle unsubscribe links and the List-Unsubscribe header automatically?",
    "Votre outil gère-t-il automatiquement les liens de désinscription ?",
    "Il nostro tasso di disiscrizione è già bassissimo, non ci serve il vostro strumento.",
    "Jak moi klienci mogą się wypisać z powiadomień SMS w Waszej aplikacji?",
    # Put back on the list: the unsubscribe was a mistake.
    "Zut, j'ai cliqué trop vite sur « se désinscrire », c'était une erreur. Vous pouvez me réinscrire ?",
    "I clicked unsubscribe by accident - could you add me back?",
    "Perdón, le di a 'darme de baja' sin querer desde el móvil. ¿Me pueden volver a apuntar?",
    "descadastrei sem querer, me coloca de volta?",
    # Invitations stopped because the meeting is booked; a request the writer says they will not make.
    "Stop sending me calendar invitations please, I already booked the Wednesday 11:00 slot.",
    "Ya no me manden más invitaciones, ya agendé para el jueves a las 11.",
    "Rassurez-vous, je ne vais pas vous demander de me retirer de votre liste, mais pas de budget cette année.",
    "No te voy a pedir que me borres, pero ahora mismo no necesitamos nada.",
    # Someone else taken off by a pronoun joined to the verb or put before it.
    "Merci de la retirer de votre liste de diffusion, elle a quitté la société.",
    "La collega è andata in pensione: vi prego di toglierla dalla vostra lista.",
    "A Sra. Ribeiro deixou a empresa. Agradeço que a retirem da vossa lista de envio.",
    "Kein Interesse. Austragen müssen Sie mich deswegen nicht, ich überlese so was einfach.",
    "Tengo otro proveedor que no me deja darme de baja. ¿Sabés si eso es legal?",
    "Could you block some time with this company's team next week?",
]


@pytest.mark.one_database("the wording of a text")
@pytest.mark.parametrize("text", OPT_OUTS)
def test_an_opt_out_in_the_words_people_write_is_an_unsubscribe_request(text: str) -> None:
    result = classify(message(text))

    assert result.kind == Kind.UNSUBSCRIBE_REQUEST, result.reason
    assert suggest(result.reply_text).category is Category.UNSUBSCRIBE


@pytest.mark.one_database("the wording of a text")
@pytest.mark.parametrize("text", DATA_REQUESTS)
def test_a_data_protection_demand_is_named_and_never_interested(text: str) -> None:
    result = classify(message(text))

    assert (result.kind, result.rule) == (Kind.UNSUBSCRIBE_REQUEST, "data_request"), result.reason
    assert suggest(result.reply_text).category is not Category.INTERESTED


@pytest.mark.one_database("the wording of a text")
@pytest.mark.parametrize(("text", "rule"), [
    # a source question in any of its words
    ("Which list did you buy my name from?", "data_request"),
    ("woher habt ihr eigentlich meine adresse?", "data_request"),
    ("Qui vous a donné mon adresse ?", "data_request"),
    ("W jaki sposób trafił do Pana mój adres e-mail?", "data_request"),
    ("Quem passou meu e-mail pra vocês?", "data_request"),
    # asked out of curiosity: held for an operator
    ("Curieux : qui vous a donné mon adresse ? Votre mail est bien tourné.", "possible_optout"),
    # a sender to block, a wish never to hear from it again, a named colleague asked to act, the writer's own
    ("Carla, consegues bloquear esta empresa?", "unsubscribe_text"),
    ("Prefiero no volver a saber de su empresa.", "unsubscribe_text"),
    ("Ich möchte von Ihnen nichts mehr hören.", "unsubscribe_text"),
    ("@Thomas tu peux voir pour qu'on arrête de recevoir leurs mails ?", "unsubscribe_text"),
    ("Hiermit melde ich mich ab.", "unsubscribe_text"),
    ("Ik meld me hierbij af.", "unsubscribe_text"),
    ("Me doy de baja, gracias.", "unsubscribe_text"),
    # "her" or "him" taken off: held for an operator, unless that person left (a referral)
    ("Ms. Grant receives a lot of unsolicited email. Please remove her from your list.", "possible_optout"),
    ("On behalf of Dr. Nguyen: please unsubscribe him from all of your communications.", "possible_optout"),
    ("Anna left the company last month, please take her off your list.", "human"),
    ("Please remove Anna Berg from your list and write to Tom instead.", "human"),
])
def test_wording_the_rules_read_as_a_request_to_stop(text: str, rule: str) -> None:
    result = classify(message(text))

    assert result.rule == rule, result.reason


def _answer(words: str, question: str) -> str:
    quote = f"On Mon, 9 Mar 2026 at 08:14, Tom <tom@outreach.example> wrote:\n> Hi Dan,\n> {question}\n> Tom\n"
    return f"{words}\n\n{quote}"


@pytest.mark.one_database("the wording of a text")
@pytest.mark.parametrize(("words", "question"), [
    ("Yes.", "Last try: shall I stop reaching out?"),
    ("Ja.", "Letzter Versuch: Soll ich mich nicht mehr bei Ihnen melden?"),
    ("Oui svp", "Dernière tentative : dois-je arrêter de vous écrire ?"),
    ("Sí.", "Último intento: ¿dejo de escribirte?"),
    ("Sì grazie", "Ultimo tentativo: smetto di scriverti?"),
    ("Ja graag.", "Laatste poging: zal ik stoppen met mailen?"),
    ("Sim.", "Última tentativa: devo parar de te escrever?"),
    ("Tak.", "Ostatnia próba – czy mam przestać pisać?"),
    ("Close it.", "Should I close your file?"),
])
def test_a_yes_to_the_quoted_question_whether_to_stop_is_a_request_to_stop(words: str, question: str) -> None:
    result = classify(message(_answer(words, question)))

    assert (result.kind, result.rule) == (Kind.UNSUBSCRIBE_REQUEST, "stop_question"), result.reason
    assert suggest(_answer(words, question)).category is Category.UNSUBSCRIBE


@pytest.mark.one_database("the wording of a text")
@pytest.mark.parametrize(("words", "question"), [
    ("Yes.", "Would Tuesday at 10 work for a quick call?"),
    ("No, keep me posted.", "Last try: shall I stop reaching out?"),
    ("Yes, send me the pricing first.", "Last try: shall I stop reaching out?"),
    ("Close to signing with another vendor, sorry.", "Should I close your file?"),
])
def test_a_yes_to_another_question_or_a_no_asks_nothing_of_the_kind(words: str, question: str) -> None:
    result = classify(message(_answer(words, question)))

    assert result.rule != "stop_question", result.reason
    assert result.kind != Kind.UNSUBSCRIBE_REQUEST, result.reason


@pytest.mark.one_database("the wording of a text")
def test_a_promise_to_write_back_from_a_date_is_no_request_to_stop() -> None:
    result = classify(message("Diese Woche Betriebsurlaub. Wir melden uns ab dem 19."))

    assert result.kind != Kind.UNSUBSCRIBE_REQUEST and result.rule != "possible_optout", result.reason


@pytest.mark.one_database("the wording of a text")
@pytest.mark.parametrize("text", NEAR_MISSES)
def test_a_near_miss_stays_a_human_reply(text: str) -> None:
    result = classify(message(text))

    assert result.kind == Kind.HUMAN_REPLY, result.reason
    assert suggest(result.reply_text).category is not Category.UNSUBSCRIBE


@pytest.mark.one_database("the wording of a text")
@pytest.mark.parametrize("line, another", [
    ("Elle a quitté la société : merci de la retirer de votre liste.", True),
    ("Mon adresse perso est dans votre fichier, merci de la supprimer de vos listes.", False),
    ("La collega è andata in pensione: vi prego di toglierla dalla vostra lista.", True),
    ("Avete la mia email personale nel vostro archivio: vi prego di toglierla dalla vostra lista.", False),
])
def test_a_pronoun_is_someone_else_only_where_the_line_says_someone_left(line, another):
    verb = re.search(r"retirer|supprimer|toglierla", line)

    assert said_of_another(line, verb.start(), verb.end()) is another


def test_wissen_is_erasure_in_dutch_only():
    """Dutch "gegevens wissen" demands erasure; German "wissen" (to know) in a question about hosting does not."""
    assert demand_words("Ik verzoek u op grond van de AVG mijn gegevens te wissen.", "")
    assert not demand_words("Als Datenschutzbeauftragter muss ich vor dem Kauf wissen, wo Sie die Daten speichern.", "")


# A newsletter footer under an away note, in the other languages: the footer is no request of the person's.
AWAY_WITH_FOOTER = [
    "Je suis absent jusqu'au 25 août inclus, sans accès à mes mails.\n\n"
    "Pour vous désabonner de nos communications, cliquez ici.",
    "Estou de licença até 20 de janeiro.\n\nPara deixar de receber as nossas comunicações, clique aqui.",
    "Ich bin bis einschließlich 18. Juli nicht im Büro.\n\nNewsletter abbestellen | Impressum | Datenschutz",
]


@pytest.mark.parametrize("text", AWAY_WITH_FOOTER)
def test_a_newsletter_footer_under_an_away_note_is_not_a_request(text: str) -> None:
    assert classify(message(text)).kind == Kind.AUTO_REPLY


# A person's away note that also asks to stop: read as an auto-reply by its words, it is heard as the request.
AWAY_AND_STOP = "I'm out of the office until Monday 14 March. Please remove me from your mailing list."
AWAY_ONLY = "I'm out of the office until Monday 14 March with limited access to email."


def test_an_away_note_that_asks_to_stop_is_an_unsubscribe_request_and_one_that_does_not_is_an_auto_reply():
    assert classify(message(AWAY_ONLY)).kind == Kind.AUTO_REPLY
    asking = classify(message(AWAY_AND_STOP))
    assert (asking.kind, asking.rule) == (Kind.UNSUBSCRIBE_REQUEST, "unsubscribe_text"), asking


def test_an_autoresponder_marked_by_its_header_stays_an_auto_reply_whatever_its_words():
    """Only words alone make an auto-reply a person's: a header that says automatic (RFC 3834) is believed."""
    raw = message(AWAY_AND_STOP).replace(b"Subject:", b"Auto-Submitted: auto-replied\nSubject:", 1)
    assert classify(raw).kind == Kind.AUTO_REPLY


@pytest.mark.one_database("the wording of a text")
@pytest.mark.parametrize("text", [
    # this one agreed or proposed to be the last
    "Let's make this one actually the last one, yeah?",
    "Wollen wir uns darauf einigen, dass das jetzt die letzte war?",
    "Ich würde es begrüßen, wenn das Ihre letzte Nachricht an mich gewesen wäre.",
    "On peut convenir que c'était la dernière ?",
    "Zullen we afspreken dat dit de laatste was?",
    "Que tal esse ser o último de verdade?",
    "Umówmy się, że to było ostatnie, dobrze?",
    # not to be written to again, after a return or ever
    "Bin bis 6.4. im Urlaub. Danach bitte nicht wieder anschreiben.",
    "Sono in ferie fino a lunedì. Comunque non mi scriva più.",
    "Jestem na urlopie do 10 kwietnia. Po powrocie też proszę do mnie nie pisać.",
    "When I'm back, please don't put me into the sequence again.",
    "Agradecia que não voltassem a contactar-nos por esta via.",
    "Si invita ad astenersi da ulteriori contatti.",
    "Hiermit bestelle ich Ihren Newsletter ab.",
    "Kunnen jullie ermee ophouden?",
    # the sender blocked, said as done
    "Sender blocked. Don't bother with the next one either.",
    "Ich habe soeben Ihre Domain in unserer Firewall gesperrt.",
    "L'Ufficio Sistemi Informativi ha inserito il vostro dominio nella blacklist del server di posta.",
    "Zablokowałem Państwa adres.",
    # more of what fed-up or helped writers say
    "Schicken Sie bitte nichts mehr an diese Adresse.",
    "Le rogamos que no vuelva a contactar con ella por esta vía.",
    "La prega di non inviargli ulteriori comunicazioni commerciali.",
    "So maybe save us both the trouble and drop me from this sequence?",
    "can u not email me every 2 days",
    "Is there a way to actually stop these?",
])
def test_wording_of_a_last_one_or_of_no_more_reads_as_a_request_to_stop(text: str) -> None:
    assert unsubscribe_phrase(text), text


@pytest.mark.one_database("the wording of a text")
@pytest.mark.parametrize("text", [
    "Let's make this the last step before we sign.",
    "Ich hoffe, dass das die letzte Rechnung ist.",
    "Das ist die letzte Version, die wir haben? Schicken Sie mir bitte die neue.",
    "J'espère que c'est la dernière étape avant la signature.",
    "Weet u of dit de laatste versie is?",
    "Este foi o último trimestre do contrato.",
    "To był ostatni dzień promocji?",
    "Non voltei a contactar o fornecedor.",
    "Non mi scriva più per mail, mi chiami dopo le 18.",
    "Ich bestelle die Ware nächste Woche ab.",
    "Proszę już nie przysyłać przypomnień, termin na czwartek mam w kalendarzu.",
    "Please stop sending me three slots in every email. Thursday 10am works.",
    "Retirez-moi de la copie, merci, je mets Sandrine en boucle.",
    "Can you send this again? Outlook blocked the images and I can't read it.",
    "Zur Info: Ihre Domain steht auf einer Blacklist, unsere Firewall hat die Mail fast geblockt.",
    "Seu email veio com um anexo .zip que o antivírus bloqueou na hora.",
    "Your address was blocked by our filter, please resend from another one.",
    "Could you not email me on Fridays, call instead?",
    "How do I stop these reminders from our CRM?",
    "Nie będę prosić o wypisanie z listy, wiem, że to Pana praca. Ale nie kupimy.",
    "Hören Sie bitte auf, mir ständig neue Einladungen zu schicken – ich hab doch schon zugesagt!",
    "Proszę usunąć mnie z DW i pisać bezpośrednio do Tomka z IT.",
    "Don Ernesto se jubiló en enero, bórrenlo de su lista.",
])
def test_the_same_words_about_something_else_ask_nothing(text: str) -> None:
    assert not unsubscribe_phrase(text), unsubscribe_phrase(text)


@pytest.mark.one_database("the wording of a text")
def test_a_source_question_asked_for_the_boss_is_a_data_protection_demand() -> None:
    assert demand_words("Vocês podem me dizer onde conseguiram o e-mail do nosso diretor?", "")
    assert demand_words("Where did you get our CEO's email address?", "")
    assert not demand_words("How did you get our director to agree to a call?", "")


_PRIVACY_NOTICE = ("Privacy notice: Glenmore Retail processes personal data in line with the UK GDPR. For your rights, "
                   "including the right to object and the right to erasure, see www.glenmore.example/privacy.")


@pytest.mark.one_database("the wording of a text")
@pytest.mark.parametrize("text", [
    f"I look after facilities, not marketing. Priya Shah runs our digital side.\n\nAndy\n\n{_PRIVACY_NOTICE}",
    "Koppelt dit met Exact Online?\n\nVerzonden vanaf mijn Galaxy\n\nBlijf op de hoogte: meld u aan voor onze "
    "nieuwsbrief. Afmelden kan altijd onderaan elke editie.",
    "¿Cuánto costaría para dos clínicas?\n\nEnviado desde mi iPhone\n\nSus datos personales forman parte de un "
    "fichero de la clínica. Puede ejercer sus derechos de supresión y oposición, así como darse de baja de nuestras "
    "comunicaciones, escribiendo a lopd@clinica.example.",
    "Passt, Dienstag 10 Uhr ist eingetragen.\n\nGesendet von Outlook für Android\n\nFolgen Sie uns auf LinkedIn. "
    "Zum Newsletter an- und abmelden: www.metallbau.example/news",
])
def test_a_company_footer_under_a_reply_asks_nothing(text: str) -> None:
    result = classify(message(text))

    assert result.kind == Kind.HUMAN_REPLY and result.rule != "possible_optout", result.reason
    assert suggest(text).category is not Category.UNSUBSCRIBE


@pytest.mark.one_database("the wording of a text")
@pytest.mark.parametrize(("text", "rule"), [
    (f"Please take me off your list.\n\nSent from my iPhone\n\n{_PRIVACY_NOTICE}", "unsubscribe_text"),
    ("Spett.le società,\n\nai sensi dell'art. 17 del Regolamento UE 2016/679 (GDPR) chiedo la cancellazione dei miei "
     "dati personali dai vostri archivi.\n\nAvv. Paolo Conti", "data_request"),
    ("Privacy notice: where did you get my address? Delete my data.", "data_request"),
])
def test_the_persons_own_words_above_a_footer_are_still_read(text: str, rule: str) -> None:
    assert classify(message(text)).rule == rule
