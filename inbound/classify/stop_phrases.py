"""The phrases of requests to stop that optout.py reads, in en, de, fr, es, it, nl, pt and pl, on folded text
(lower case, no accents): "please don't email again", "lassen Sie mich in Ruhe", "parem de me enviar". Data
only; optout.py compiles them and sets aside the requests about others, negated or said of a detail.
"""

_OWN_ADDRESS = (
    r"(my|our) (e-?mail|email address|e-?mail address|address|contact details|details|name|data|personal data"
    r"|information|info)"
)
# The sender blocked, said as done: "I've blocked your domain", "Ich habe Ihre Domain in unserer Firewall gesperrt",
# "ha inserito il vostro dominio nella blacklist", "Sender blocked.". Not a mail, an attachment or a link a filter
# blocked ("our antivirus blocked the .zip", "Outlook blocked the images"), a list the domain is found on, or what
# a mistake blocked or a resend would cure (read after the words).
_YOUR = (r"(your|ihre|eure|deine|votre|vos|ton|su|sus|tu|vuestro|vuestra|il vostro|il suo|vostro|uw|jullie|je"
         r"|wasz\w*|panstwa|pana|pani|o vosso|o seu|o teu|seu|vosso|this|diese[nr]?|dieses|ce|cet|este|questo|dit|deze"
         r"|ten|tego)")
_SENDER = (r"(domain|domaine|dominio|domein\w*|verzenddomein|domen\w*|absender\w*|sender|expediteur|remitente"
           r"|mittente|afzender|nadawc\w*|remetente|e-?mail address|address|adresse|e-?mail-?adresse|direccion"
           r"|indirizzo|adres\w*|endereco)")
_BLOCKED = (r"(blocked|blacklisted|gesperrt|geblockt|blockiert|bloque|bloquee|bloqueado|bloqueada|bloqueou|bloqueei"
            r"|bloqueamos|bloccat[oai]|geblokkeerd|zablokowal\w*|zablokowan\w*)")
_BLACKLIST = (r"(in|into|nella|nelle|en|na|op|w|dans)( (the|our|die|unsere|la|onze|de|a|nuestra|nossa|notre|naszej"
              r"|nasza))? (blacklist|black list|liste noire|lista nera|lista negra|zwarte lijst|czarnej liscie"
              r"|lista de bloqueados)")
_NOT_BY_MISTAKE = (
    r"(?!.*\b(resend|re-send|send (it|this|that) again|by mistake|accidentally|per errore|por error|par erreur"
    r"|aus versehen|versehentlich|per ongeluk|per abuis|przez pomylke|por engano|erneut|nochmal|renvoyer|reenviar"
    r"|reinviare|opnieuw|ponownie)\b)"
)
_SENDER_BLOCKED = (
    rf"\b{_YOUR}( \w+)? {_SENDER}\b{_NOT_BY_MISTAKE}.{{0,40}}\b({_BLOCKED}|{_BLACKLIST})\b"
    rf"|\b{_BLOCKED}{_NOT_BY_MISTAKE} (\w+ )?{_YOUR}( \w+)? {_SENDER}\b"
    rf"|^\W*({_SENDER} )?{_BLOCKED}(?=\W*$|\W*[.!])"
    r"|\b(i|we)('ve| have)? (now |just |already )?(blocked|blacklisted) you\b|\bvi ho bloccat\w*"
    r"|\b(ich habe|wir haben) (sie|euch|dich) (\w+ )?(blockiert|gesperrt|geblockt)\b"
)
# Sending to the writer, as a question about more to come names it: "send", "schicken", "mandarmi", "wysłać".
_CONTACT_LATE = (
    r"\b(send\w*|sent|mail\w*|e-?mail\w*|schick\w*|senden|envoy\w*|envi\w*|mand\w*|invi\w*|stur\w*|wysla\w*"
    r"|wysyl\w*|przysl\w*|receber|recevoir|recibir|ricever\w*|bekommen|krijgen|dostac|otrzymac)\b"
)
# The next one threatened with the spam folder: "next one goes straight to spam", "I'll be marking these as junk from
# now on". Not a mail that went there ("your last mail landed in spam") nor a folder to look in ("I'll check spam").
_SPAM_WORDS = (r"(junk|spam\w*|quarantine|quarantaine|quarantena|cuarentena|quarentena|kwarantann\w*|spammap"
               r"|spamfilter|spamordner|indesirables|indeseados|lixo eletronico|posta indesiderata)")
_NEXT_WORDS = (r"(next|nachste\w*|prochaine?|proxim[oa]s?|prossim[oa]|volgende|nastepn\w*|from now on|ab (jetzt|sofort)"
               r"|desormais|dorenavant|a partir de ahora|d'ora in poi|vanaf nu|od teraz|daqui (em|pra) frente"
               r"|any more|another|noch eine|encore un|otro|un altro|un'altra|nog een|jeszcze jeden|mais um)")
_NEXT_TO_SPAM = (
    rf"^(?!.*\b(check\w*|look\w*|search\w*|find|found|such\w*|cherch\w*|busc\w*|cerc\w*|zoek\w*|sprawdz\w*"
    rf"|procur\w*|verifi\w*|kijk\w*|schau\w*|guard\w*|mira\w*|regard\w*)\b)"
    rf"(.*\b{_NEXT_WORDS}\b.{{0,60}}\b{_SPAM_WORDS}\b|.*\b(mark\w*|flag\w*|send\w*|mov\w*|filter\w*)\b.{{0,25}}"
    rf"\b{_SPAM_WORDS}\b.{{0,20}}\b{_NEXT_WORDS}\b)"
)
STOP = {
    # The same request in every language: "spare yourself the next follow-up", "block our domain", "stop for the
    # whole team", "you can stop now".
    "all": (
        # the writer takes themselves off, in the first person: "ich melde mich hiermit ab", "me doy de baja"
        # ("wir melden uns ab dem 19." is a promise to write back from the 19th: the word ends the clause)
        r"\b((ich|wir) (melde|melden|trage|tragen)|(melde|trage) ich|(melden|tragen) wir) (mich|uns) (hiermit |hier "
        r"|jetzt |hiemit )?(ab|aus)(?=\s*([.!,;]|$))"
        r"|\b(me|nos) (doy|damos) de baja\b"
        r"|\b(ik|wij|we) (meld|melden|schrijf|schrijven) (me|mij|ons) (hierbij |bij deze )?(af|uit)\b"
        r"|\bmi (cancello|disiscrivo)\b|\bci (cancelliamo|disiscriviamo)\b|\bme (descadastro|desinscrevo)\b"
        r"|\bje me (desabonne|desinscris)\b|\bwypisuje (sie|nas)\b",
        r"\b(spare|sparen|ahorr\w*|epargn\w*|risparmi|bespaar\w*|besparen|poup\w*|darowa\w*|daruj\w*)\b.{0,50}"
        r"\b(next|nachste\w*|proxim\w*|prochaine?|prossim\w*|volgende|nastepn\w*) (one|follow-?up|\w*mail|message"
        r"|reminder|nachfass\w*|nachricht|seguimiento|correo|mensaje|relance|sollecito|messaggio|herinnering|bericht"
        r"|mensagem|przypomnienie|wiadomosc)",
        r"\b(nachste\w*|volgende|nastepn\w*) (\w+ )?(nachfass\w*|\w*mail|nachricht|herinnering|bericht|przypomnienie"
        r"|wiadomosc)\b.{0,40}\b(sparen|besparen|darowa\w*)\b",
        r"\b(block|blocken|sperren|blokkeer|blokkeren|zablokuj\w*|zablokowac|bloquez|bloqueen|bloquead|bloquear"
        r"|bloccate|bloccare|bloqueiem)\b.{0,40}\b(domain|domaine|dominio|domein|domene|domen\w*)\b",
        # a sender to be blocked, named as this one: "can you block this company?", "zablokować tę firmę"
        # (not time blocked in a calendar: "block some time for this company's team")
        r"\b(block|blocken|sperren|blokkeer\w*|zablokuj\w*|zablokowac|bloque\w*|blocc\w*)\b(?!.{0,15}\b(time|hours?"
        r"|slots?|minutes|mins?|morning|afternoon|calendar|agenda|tiempo|zeit|termin\w*|temps|creneau|tempo|tijd|czas)\b)"
        r".{0,20}\b(this|that|these|diese[nrs]?|dieses|cette|ce|ces|esta|este|esa|ese|estos|essa|esse|questa|questo"
        r"|quest'|dit|deze|die|tego|te|ta|tej) ?(company|firm|sender|outfit|firma|absender|unternehmen|entreprise"
        r"|societe|expediteur|empresa|remitente|remetente|azienda|ditta|mittente|bedrijf|afzender|firme|nadawc\w*)\b",
        r"\b(stop|paren|parem|arretez|fermatevi|smettete|horen sie|stoppen sie)\b.{0,20}\b(for|pour|para|per|com|con"
        r"|fur|voor) (the |toute l'|todo el |toda a |tutto il |das |het |a )?(whole |entire |ganze |hele |toda )?(team"
        r"|equipe|equipo|equipa|squadra|zespol\w*|company|firm)",
        r"\b(you can|you may|sie konnen|vous pouvez|ya puede|puede|ja pode|pode|puo|potete|u kunt|je kunt|moze pan"
        r"|mozecie|moze pani) (jetzt |maintenant |ya |ja |adesso |nu |juz )?(stop|aufhoren|arreter|parar|smettere"
        r"|stoppen|przestac)( now| here| there| maintenant| ya| adesso| nu)?(?=[.!\s]*$)",
        r"\b(rather|prefer(red)?) (that )?you (didn'?t|did not|stopped|not) (e-?mail|contact|writ|send|messag)\w*",
        r"\blieber,? (sie|du|ihr) (schrieben|schreiben|mailen|mailten|kontaktieren)\w* (mir |mich |uns )?(nicht|nie)"
        r" mehr\b",
        r"\b(wolal\w*|wole),? (zeby|aby) (pan |pani |panstwo |wy )?(juz )?nie (pisal\w*|wysylal\w*|kontaktowal\w*)\b",
        r"\bprefer\w* que no (me|nos) (escrib|envi|mand|contact)\w*",
        r"\bprefer\w* que vous ne (m'|me |nous )?(ecriv|envoy|contact|relanc)\w* plus\b",
        r"\bpreferi\w* che non (mi|ci) (scriv|mand|invi|contatt)\w*", r"\bliever dat (u|je|jullie) (niet meer|geen) ",
        r"\bprefer\w* que (nao )?(me |nos )?nao (me |nos )?(escrev|envi|mand|contact)\w*",
        # consent withdrawn: "I withdraw my consent", "retiro mi consentimiento", "wycofuję zgodę"
        r"\b(withdraw\w*|revok\w*|retir\w*|revoqu\w*|revoc\w*|revog\w*|widerruf\w*|trek\w*|intrek\w*|wycofuj\w*"
        r"|cofam)\b.{0,12}\b(consent|consentement|consentimiento|consenso|consentimento|einwilligung|zustimmung"
        r"|toestemming|zgod\w*)\b",
        # wishing for this to be the last one: "I'd be grateful if this were the last", "ojalá sea el último"
        r"\b(hope|grateful|appreciate\w*|glad|prefer|rather|wish|make sure)\b.{0,30}\b(this|it) (was|were|is|will be"
        r"|be) (the|your) (last|final)\b",
        r"\b(das|dies|diese) (war|ist|bleibt|sei) (hoffentlich |bitte |jetzt )?(die|das) letzte( (nachricht|mail"
        r"|e-?mail|erinnerung|zuschrift|anfrage|nachfass\w*))?( (an mich|an uns|von ihnen|von euch|dazu|in dieser"
        r" sache))?(?=\W*$|\W*[.!?,])",
        r"\b(fosse|sia) (questa |questo )?l'ultim[oa]\b|\bquest[ao] (fosse|sia) l'ultim[ao]\b",
        r"\b(sea|fuera|fuese) (este |esta )?(el|la) ultim[oa]\b|\b(soit|serait) (le|la) dernier\w*\b",
        r"\b(seja|fosse) (este |esta )?(o|a) ultim[oa]\b"
        r"|\b(dit|het) (het |de )?laatste (bericht|mailtje|mail|e-?mail)\w* (is|was|zijn|blijft)\b"
        r"|\b(bylby|bylaby|byl|byla|bedzie) (to )?ostatni\w*( (mail|e-?mail|wiadomosc|przypomnienie|raz))?"
        r"(?=\W*$|\W*[.!?,])",
        # ... or agreed or proposed so: "let's make this one actually the last one", "wollen wir uns darauf einigen,
        # dass das jetzt die letzte war?", "zullen we afspreken dat dit de laatste was?", "umówmy się, że to było
        # ostatnie"
        r"\bmake (this|that|it) (one )?(actually |really |truly )?the (last|final)( (one|e-?mail|mail|message|reminder"
        r"|nudge|follow-?up|time))?(?=\W*$|\W+(ok|okay|yeah|yes|please|pls|thanks|deal)\b|\W*[.!?,])",
        r"\b(das|dies|dieses|diese) ((jetzt|nun|hoffentlich|wirklich|bitte) )?(die|das|ihre|eure|deine) letzte"
        r"( (nachricht|mail|e-?mail|erinnerung|zuschrift|anfrage|nachfrage|nachfass\w*))?( (an mich|an uns|in dieser"
        r" sache|von ihnen|von euch|dazu))? (war|ware|ist|bleibt|bliebe|sei|gewesen)\b",
        r"\b(convenir|convenons|disons|esperons|j'espere) que (c'etait|c'est|ce soit|ce sera|ce message (etait|soit"
        r"|est)) (bien |vraiment )?(la|le) dernier\w*( (fois|relance|message|mail|e-?mail|sollicitation))?"
        r"(?=\W*$|\W*[.!?,])",
        r"\b(dit|deze) (echt |nu |dan |wel )?de laatste( (bericht|mail|mailtje|e-?mail|herinnering|keer))? (is|was"
        r"|blijft|zijn|waren)\b",
        r"\b(esse|este|essa|esta|isso|isto) (ser|seja|fosse|foi) (mesmo |de fato |realmente )?(o|a) ultim[oa]"
        r"( (e-?mail|mail|mensagem|contato|contacto|lembrete))?(?= de verdade| mesmo|\W*$|\W*[.!?,])",
        r"\b(to|ten|ta) (bylo|byloby|byl|byla) (juz )?ostatni\w*( (mail|e-?mail|wiadomosc|przypomnienie|raz))?"
        r"(?=\W*$|\W*[.!?,])",
        # counting what is still to come: "how many more of these will you send?", "ile jeszcze takich maili"
        r"\b(how many more|wie viele (\w+ ){0,6}(noch|denn noch)|ile jeszcze|quant[ei] altr[ei]"
        r"|cuant[oa]s (\w+ )?mas|combien (de \w+ |d'\w+ )?encore|quant[oa]s (\w+ )?mais|hoeveel (\w+ ){0,3}nog)\b"
        r".{0,60}" + _CONTACT_LATE,
        # consent challenged: "who allowed you to write to me?", "wer hat Ihnen erlaubt, mich anzuschreiben?"
        r"\bwho (allowed|permitted|gave you (the )?(permission|right))\b"
        r"|\bwer hat (ihnen|euch|dir) (eigentlich |denn )?(erlaubt|die erlaubnis)"
        r"|\bqui vous a (autorise|permis|donne le droit)|\bquien (les|os|te|le) (autorizo|dio (permiso|derecho))"
        r"|\bchi (vi|ti|le) ha (autorizzat|dato il permesso)|\bwie heeft (u|jullie|je) (toestemming|het recht)"
        r"|\bquem (vos|lhes|te|lhe) (autorizou|deu (permissao|o direito))"
        r"|\bkto (wam|panu|pani|panstwu|ci) (pozwolil|dal prawo|zezwolil)",
        # the next one threatened with the spam folder: "next one goes straight to spam", "volgende keer in de spammap"
        _NEXT_TO_SPAM,
        # "let's end it here", "hier houdt het op", "damit ist Schluss"
        r"\b(let'?s|we can|we should) (end|stop|leave) (it|this|things) (here|there)\b|\bhier houdt het op\b"
        r"|\bon s'arrete la\b|\b(lo )?dejamos aqui\b|\bfiniamola qui\b|\bparamos por aqui\b"
        r"|\bna tym (koniec|poprzestanmy)\b|\bdamit ist (jetzt |dann )?schluss\b",
        # a domain named to be blocked: "can you block northgate-example.co.uk on your side?"
        r"\b(block|blocken|sperren|bloque\w*|blocc\w*|blokkeer\w*|zablokuj\w*)\b.{0,20}\b[\w-]+\.(com|co\.uk|uk|de|fr|es|it|nl"
        r"|pt|pl|be|ch|at|eu|net|org|io|br|mx|ar|cl|co)\b",
        # enough of it: "enough with the emails", "dość tego spamu", "basta con queste mail", "chega de spam"
        r"^\W*(enough|genug|assez|basta|chega|genoeg|dosc|wystarczy|ya basta|ca suffit)\b.{0,20}\b(spam\w*|e-?mails?"
        r"|mails?|maili|wiadomosci|mensajes|correos|messaggi|berichten|mensagens|courriels)\b",
    ),
    "en": (
        r"\b(lose|forget|scrap|bin|purge|wipe|drop|erase|delete|remove|take) " + _OWN_ADDRESS,
        r"\b(do not|don'?t|dont|never|pls don'?t|please don'?t) (e-?mail|contact|write|message|mail|spam)( me| us)?"
        r" (again|anymore|any more|further)\b",
        r"\bstop (e-?mailing|mailing|sending|contacting|writing|messaging|spamming|bothering)\b",
        r"\b(leave|let) (me|us) (alone|be)\b",
        r"\b(i|we) (do not|don'?t) want to hear from you\b",
        r"\btake (me|us) off\b", r"\boff (your|this) (mailing |e-?mail )?list\b",
        r"\b(do not|don'?t|dont|never) send (to )?(me |us )?(any )?(more |further )?(e-?mails?|mails?|messages?"
        r"|follow-?ups?|reminders?|newsletters?|marketing|offers?)\b",
        r"\b(be|being|get|getting) (removed|taken off|unsubscribed|deleted|struck off|crossed off|dropped)"
        r"(?= (from|off)\b)",
        r"\b(have|get) (me|us|my (e-?mail|address|details|name)) (removed|deleted|taken off|unsubscribed)\b",
        r"\brefrain from (contacting|e-?mailing|sending|writing|messaging)\b",
        r"\bno (more |further )?(outreach|cold (e-?mails?|outreach)|sales e-?mails?|prospecting)\b",
        r"\bmake (this|it) the (last|final) (one|e-?mail|message)\b",
        r"\b(drop|pull|cut|scratch|strike) (me|us) (from|off|out of) (this|the|your|ur) (\w+ )?(sequence|campaign"
        r"|cadence|list|drip|database|crm)\b",
        r"\b(can|could|would) (you|u|ya) (please |pls |plz )?not (e-?mail|mail|message|contact|write|spam|text)\w*"
        r" (me|us)\b(?![^.?!]{0,40}\b(call|phone|ring|instead|but)\b)",
        r"\b(is there a way|how (do|can|could) (i|we)|how to) (\w+ ){0,2}(stop|get off|get rid of|unsubscribe from"
        r"|opt out of) (these|them|your (e-?mails|mails|messages|emails))(?=\W*$|\W*[?.!]| (e-?mails|mails|messages"
        r"|emails|follow-?ups)\b)",
        r"\b(do not|don'?t|dont|never) (re-?add|add|put|include|enrol\w*|sign) (me|us)( back| up)? (in|into|on|to|for)"
        r"( \w+){0,2} (sequences?|lists?|campaigns?|cadences?|mailings?|databases?|crm|drips?)\b",
        r"\b(do not|don'?t|stop) us(e|ing) (my|this) (e-?mail )?address for (marketing|sales|commercial|promotion)",
        r"\b(kill|end|cancel|close) (the|this|your) (e-?mail )?(sequence|campaign|cadence|drip)\b",
        r"\b(do not|don'?t|dont|never|stop) (circl(e|ing) back|follow(ing)? up|chas(e|ing)( me| us)?|reach(ing)? out"
        r"|pester(ing)?( me| us)?)( to me| with me| with us)? (again|anymore|any more)\b",
        r"\b(not|never) being (chased|contacted|e-?mailed|pestered|followed up)\b",
        r"\b(honou?r|respect|process|action) (my|our|this) (opt-?out|unsubscribe|removal)\b",
        r"\b(me|us) off (the|your|ur|this|that|any|all|every) (\w+ )?(list|lists|database|distribution)\b",
        r"\b(block|blacklist) (my|our|this) (e-?mail|email id|mail id|id|address|domain)\b",
        _SENDER_BLOCKED,
    ),
    "de": (
        r"\blassen sie (mich|uns) (bitte )?in ruhe\b",
        r"\b(nimm|nehmt|nehmen sie) (mich|uns) (bitte )?(von|aus) (der|ihrer|eurer|dieser|deiner|ihrem|eurem|dem) \w*"
        r"(liste|verteiler)\b", r"\bwie werde (ich|wir) (sie|euch|dich) (\w+ ){0,2}los\b",
        r"\b(mich|uns) (bitte )?in ruhe lassen\b",
        r"\bkeine (e-?mails|mails|nachrichten|werbung|newsletter|anfragen|akquise|kaltakquise|kontaktaufnahme\w*"
        r"|kontaktversuche|zusendungen|angebote) mehr\b",
        r"\b(schreiben|mailen|kontaktieren) sie (mich|uns|mir) (bitte )?(nie wieder|nie mehr|niemals wieder)\b",
        r"\b(bitte|danach|kunftig|zukunftig|dann) (\w+ ){0,2}nicht (wieder|mehr|erneut|nochmal|noch einmal) (zu )?"
        r"(anschreiben|kontaktieren|anmailen|belastigen|zuschreiben)\b",
        r"\b(bestelle|bestellen) (ich |wir )?(hiermit |hiemit )?(\w+ ){0,2}(newsletter|mails?|e-?mails?|werbung"
        r"|zusendung\w*|infos?|nachrichten|mailings?) ab\b",
        r"\bbitte (auch )?keine (weiteren |neuen )?(\w*mails?|nachfass\w*|follow-?ups?|nachrichten|werbung|anfragen"
        r"|newsletter)\b", r"\bkeine weiteren (\w*mails?|nachfass\w*|follow-?ups?)\b",
        r"\b(wunsche|wunschen) (keine|keinen) (weiteren )?(kontakt\w*|zusendungen|mails|e-?mails|werbung"
        r"|nachrichten)\b",
        r"\b(adresse|e-?mail-?adresse|daten) nicht (mehr|weiter) (zu )?(verwenden|nutzen|benutzen)\b",
        r"\b(nehmt|nimm|nehmen sie) (mich|uns) (\w+ ){0,2}(raus|heraus)\b",
        r"\bvon (weiteren|kunftigen|jeglichen) (kontakt\w*|zusendung\w*|e-?mails|mails|anfragen|nachrichten"
        r"|anschreiben)\b.{0,40}\b(abzusehen|absehen|abstand)\b",
        r"\b(nehmen|streichen|entfernen|loschen) sie (mich|uns|meine \w+)\b",
        r"\btragen sie (mich|uns)\b.{0,20}\baus\b",
        r"\bvon (ihrer|eurer|dieser) (liste|verteilerliste|mailingliste)\b",
        r"\bvon der (verteilerliste|mailingliste)\b",
        r"\bwiderrufe\b.{0,40}\beinwilligung\b",
        r"\b(stellen sie|stellt|bitte) (den |die |das |alle |jegliche |jeden |jede )?(versand|zusendung\w*"
        r"|aussendung\w*|e-?mails?|mails?|mailings?|newsletter|werbung|kontaktaufnahme\w*|kontaktversuche)\b"
        r".{0,30}\bein\b",
        r"\b(versand|zusendung\w*|aussendung\w*|e-?mails?|mails?|mailings?|werbung|kontaktaufnahme\w*)\b"
        r".{0,20}\beinstellen\b",
        r"\b(entfernt|geloscht|ausgetragen|gestrichen|abgemeldet|herausgenommen|rausgenommen)( zu)? werden\b",
        r"\b(schick|sende|mail|schreib)\w*( sie| s'| s| ihr| du)?( mir| uns)?( bitte| doch| einfach)* (nix|nichts"
        r"|keine \w+) mehr\b",
    ),
    "fr": (
        r"\bcess(ez|er) de (m'|me |nous )?(envoyer|ecrire|contacter|solliciter)",
        r"\b(ne )?(veux|voulons|souhaite|souhaitons) plus (de |d')?(mails|e-?mails|messages|courriels|sollicitations)",
        r"\b(retirez|supprimez|effacez|enlevez) (moi|mon adresse|mes coordonnees|mon e-?mail|mes donnees)\b",
        r"\bfoutez-moi la paix\b", r"\blaissez-(moi|nous) tranquilles?\b",
        r"\bne (me |m'|nous )?(contact|ecriv|envoy|sollicit|relanc|mail|spamm)\w* plus\b",
        r"\bde plus (me |m'|nous )(envoyer|ecrire|contacter|solliciter|relancer)\b",
        r"\b(etre|d'etre) (retire|supprime|desinscrit|efface|raye|enleve|desabonne)e?s?\b",
        r"\babsten(ir|ez)(-vous)? de (m'|me |nous )?(contacter|ecrire|envoyer|solliciter|relancer)",
        r"\bplus aucun (envoi|mail|e-?mail|message|courriel|relance)\b",
        r"\bsortez[- ](moi|nous)\b|\b(me|nous|m') sortir (de|du) (votre|vos|la|ce|cette|votre)\b",
        r"\b(m'|me |nous )(oter|enlever|retirer|rayer|supprimer) (de|du)\b",
        r"\bsor(s|tir) de (votre|vos|la|cette) (liste|fichier|base|mailing)",
        r"\bfinis? les (mails|e-?mails|messages|relances)\b",
        r"\bplus rien,? (s'il vous plait|svp|merci)\b",
        r"\barret(e|es|ez|er) de (m'|m |me |nous )?(ecrire|envoyer|contacter|spammer|relancer|solliciter)",
        r"\bne (me |m'|nous )(recontact|relanc)\w* (plus|pas|jamais)\b",
    ),
    "es": (
        r"\b(solicito|pido|quiero|queremos|deseo|solicitamos) (la |darme de |darnos de )?baja\b",
        r"\bno (me|nos) (escriban|escribas|escribais|contacten|envien|mandes|manden) mas\b",
        r"\bdej(en|ad|e) de (escribirme|enviarme|contactarme|mandarme|escribirnos|enviarnos|molestar)",
        r"\b(borren|borrad|eliminen|eliminad|quiten|quitad) (mi|mis|nuestr[oa]s?) ",
        r"\b(eliminenme|eliminadme|borrenme|borradme|saquenme|sacadme|quitenme|quitadme)\b",
        r"\bser (eliminad|borrad|retirad|excluid|quitad)[oa]s?\b|\bser dad[oa]s? de baja\b",
        r"\bque (me|nos) (borr|elimin|quit|saqu|sac)\w*|\bque (me|nos) (den|dieran|deis) de baja\b",
        r"\babst(engan|enga|eneos|enerse) de (enviar|escribir|contactar|mandar)",
        r"\bni un (correo|email|e-mail|mensaje|mail) mas\b",
        r"\b(darse|darnos) de baja\b", r"\bfuera de (la|su|vuestra|esta|sus) lista", r"\bfuera de mi (bandeja|buzon)",
        r"\bya vale de (mandar|enviar|escribir)\w*", r"\bdej(en|ad|e|a)(me|nos)? en paz\b",
        r"\bno (me|nos) (enviaran|enviasen|mandaran|mandasen|escribieran|escribiesen|contactaran|contactasen)\b",
        r"\bno (me|nos) (escrib|contact|envi|mand|molest)\w* (mas|nunca mas)\b",
        r"\bno (me |nos |le |les )?(vuelva|vuelvan|vuelvas|volver|volvais) a (contact|escrib|envi|mand|molest)\w*",
        r"\b(denme|dame|darme|darnos|den|de) de vaja\b",
        r"\bno (recib\w*) (nada|ningun\w*) mas\b",
        r"\brechaz\w* (cualquier|todo|todos los|todas las) (\w+ )?(envio|correo|comunicaci|mensaje)\w*",
    ),
    "it": (
        r"\bnon (voglio|vogliamo|desidero) piu (ricevere|essere contattat[oa])",
        r"\bsmettete(la)? di (scrivermi|contattarmi|inviarmi|mandarmi|scriverci)",
        r"\b(toglietemi|toglimi|rimuovetemi|cancellatemi|eliminatemi)\b",
        r"\b(cancellare|cancellate|rimuovere|rimuovete|eliminare|eliminate) (il mio|i miei|la mia|le mie) ",
        r"\b(non|nn) (scrivetemi|contattatemi|scrivermi|contattarmi|contattarci|scriverci|contattateci|scriveteci)\b",
        r"\bnon (mi |ci )?(mandate|inviate|scrivete|mandare|inviare)(mi|ci)? (piu|altr\w+|ulterior\w+)\b",
        r"\b(niente|nessuna?) (piu |altre? )?(mail|e-?mail|email|messaggi|comunicazioni|newsletter|promemoria"
        r"|solleciti)\b",
        r"\bessere (rimoss|cancellat|tolt|eliminat|disiscritt)[oaie]\b",
        r"\bastene(te|rvi|tevi|rsi)\w* da(l|ll'|llo)? ?(contattar|scriver|inviar|mandar)",
        r"\b(non|nn) (mi|ci) (scriv|mand|invi|contatt)\w* (piu|mai piu)\b(?! (per|via) (e-?mail|mail|posta))",
        r"\bnon (inviar|mandar|scriver|spedir)\w* (piu |ancora )?(ulterior\w+|altr[ei]) (comunicazion\w*|messagg\w*"
        r"|e-?mail|mail|offert\w*|propost\w*|newsletter)",
        r"\bastene\w* da(l|gli|lle|i)? (ulterior\w+|altr\w+|ogni|qualsiasi|qualunque) (contatt\w*|invi\w*"
        r"|comunicazion\w*|messagg\w*|mail|e-?mail)",
    ),
    "nl": (
        r"\b(geen|niet langer) (e-?mails|mails|berichten|nieuwsbrieven)( meer)?\b.{0,20}\bontvangen\b",
        r"\bgeen (e-?mails|mails|berichten) meer\b",
        r"\bgeen \w*(mails|mailtjes|berichten)( meer)?\b.{0,25}\bontvangen\b",
        r"\bstop (met|nu met) (mailen|e-?mailen|sturen|berichten)\b",
        r"\bhaal (me|mij|ons)( \w+){0,2} (van|uit|eraf)\b", r"\bhaal (me|mij|ons) er( \w+){0,2} af\b",
        r"\bhaal (mijn|onze) \w+ (van|uit)\b",
        r"\b(me|mij|ons|mijn \w+|onze \w+|dit (e-?mail)?adres) (\w+ )?(van|uit) (uw|jullie|de|je|deze|het)"
        r" \w*(lijst|bestand|database|crm)\w*( \w+)? (te )?(halen|gehaald|verwijderen|verwijderd|schrappen"
        r"|geschrapt)\b",
        r"\bneem geen contact (meer )?(met (mij|me|ons) )?op\b",
        r"\bgeen (\w+ ){0,2}?(e-?mails|mails|mailtjes|berichten|follow-?ups|herinneringen|nieuwsbrieven|reclame"
        r"|aanbiedingen) meer\b",
        r"\b(verwijderd|gewist|uitgeschreven|afgemeld|gehaald|geschrapt) (te )?(kunnen )?worden\b",
        r"\bverwijder (mij|me|ons|mijn|onze)\b",
        r"\bniet (meer|verder|langer) (te )?(mailen|e-?mailen|benaderen|contacteren|lastigvallen)\b",
        r"\buit (te )?schrijven\b", r"\bschrijf (me|mij|ons) uit\b", r"\bgeen acquisitie meer\b",
        r"^\W*(van|uit) (de|uw|jullie|je) \w*(lijst|bestand)\w* (te )?(halen|verwijderen|schrappen)\b",
        r"\b(wens|wensen) geen (verdere |verder )?(contact|correspondentie|mails|berichten|e-?mails)\b",
        r"\b(dit|mijn) (e-?mail)?adres niet (meer|langer) (te )?gebruiken\b",
        r"^\W*(hou|houd) (toch |nou |nu |eens |er )?(op|mee op)\b",
        r"\b(kunnen|kunt|wilt|willen) (jullie|u|je) (\w+ )?(ermee|daarmee|hiermee) (ophouden|stoppen)\b",
        r"\bstuur (me|mij|ons) (alsjeblieft |aub |ook |dan |voortaan )*(niets|niks|geen \w+) meer\b",
    ),
    "pt": (
        r"\b(removam|remova|removem|apaguem|apague|retirem|tirem)( o| a)? (meu|minha|meus|minhas|me)\b",
        r"\b(tirar|retirar|remover|apagar|excluir|descadastrar|tirem|retirem|removam|apaguem|excluam|descadastrem)"
        r"-(me|nos)\b",
        r"\bnao (quero|queremos|desejo) (receber )?mais\b",
        r"\bparem de (me |nos )?(enviar|mandar|escrever|contactar|contatar)",
        r"\bnao (me|nos) (enviem|mandem|escrevam|contactem|contatem) mais\b",
        r"\bser (removid|retirad|excluid|descadastrad|apagad|eliminad)[oa]s?\b",
        r"\babst(enham|enha|er)-se de (me |nos )?(contactar|contatar|enviar|escrever)",
        r"\bnenhum (e-?mail|email|contato|contacto|envio) a mais\b|\bmais nenhum (e-?mail|email|contato|envio)\b",
        r"\bnao (me |nos )?(procur|contact|contat|mand|envi|escrev)\w* mais\b",
        r"\bque (me|nos) (retirem|removam|tirem|excluam|apaguem|descadastrem)\b",
        r"\b(deix\w*)[- ](me|nos) em paz\b",
        r"\bnao (me |nos )?(volte|voltem|voltes|voltasse|voltassem|voltar|voltarem) a (contact|contat|escrev|envi"
        r"|mand|inclu|incomod|procur)\w*",
    ),
    "pl": (
        r"\bnie (chce|chcemy|zycze sobie) (otrzymywac|dostawac|wiecej)",
        r"\b(usun|usuncie|usunac|usuniecie|wypiszcie|wypisz) (mnie|moj|moje|mojego|moich|nas)\b",
        r"\bprzesta(c|ncie|n) (do mnie |do nas )?(pisac|wysylac)",
        r"\bprosze (juz )?(mnie )?(juz )?(nie pisac|wiecej nie pisac|nie wysylac|nie kontaktowac)\b",
        r"\bniekontaktowanie\b", r"\bani jednego (maila|wiadomosci)\b", r"\bprosze (juz )?nie ponawiac\b",
        r"\b(zostawcie|zostaw|zostawic)\b.{0,25}\bw spokoju\b|\bdajcie (mi|nam) spokoj\b",
        r"\bpowstrzyma\w* (sie )?od (kontakt|wysyl|pisan)\w*",
        r"\bprosze( (juz|tez|wiecej|do mnie|do nas|mnie|mi|nam))* nie (pisac|wysylac|przysylac|przesylac"
        r"|kontaktowac)\b",
        r"\bzostac (usuniet|wypisan|wykreslon|skreslon)\w*",
        r"\bkoniec z (mailami|wiadomosciami|reklamami|newsletter\w*)\b",
        r"\bnie (przesylajcie|wysylajcie|przysylajcie|piszcie|przesylac|wysylac|przysylac)\b.{0,30}\b(wiecej|juz)\b",
        r"\b(wiecej|juz) nie (przesylajcie|wysylajcie|przysylajcie|piszcie)\b",
        r"\brezygnuje z (newslettera|subskrypcji|mailingu|wiadomosci|ofert|korespondencji|kontaktu)\b",
        r"\b(mnie|nas) (usunac|usuncie|wypisac|wypiszcie|wykreslic)\b",
        r"\bnic (wiecej|juz) nie (dostawal\w*|otrzymywal\w*|przychodzil\w*)"
        r"|\bnie (dostawal\w*|otrzymywal\w*) (nic|juz nic)\b",
    ),
}
