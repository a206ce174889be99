"""The phrase tables behind a reply's suggested category (intent.py reads them). Pure data: no ORM.

One table per category, one list per language, the phrases grouped by how strongly they decide:

    DECISIVE 0.95  the reply says it in so many words ("please remove me", "I'm not the right person")
    STRONG   0.90  an explicit statement ("not interested", "booked a slot for Tuesday")
    CLEAR    0.80  the usual wording of that answer ("tell me more", "we're all set", "see you Thursday")
    WEAK     0.65  leans that way, often overruled ("sounds good", "interesting")
    HINT     0.50  a word that belongs to that answer and little else ("pilot", "Angebot", "créneau"): decides
                   only when no phrase does, at low confidence

The strongest phrase found decides; between equals, the more specific category (the order of CATEGORY_ORDER)
and then the longer phrase. So "not now, maybe in Q3" (CLEAR, not interested) wins over "sounds good"
(WEAK, interested), and "not interested — talk to Ana" is a referral.

How to write a phrase:
- a regular expression, matched case-insensitively, whole words only, anywhere in the reply's new text;
- a space matches any run of spaces, line breaks or a hyphen ("dites-m'en" = "dites m'en");
- an apostrophe is optional and may be ’ or ' ("don't", "dont", "don’t");
- an accented letter also matches its plain form (é = e, ä = ae or a, ß = ss): people type without accents;
- {day} a weekday, {month} a month (the names return_date.py reads), {time} "3", "3pm", "15:00", "15h",
  "15 Uhr", {name} a capitalised name, {email} an address.

Unsubscribe and out-of-office wording that ingestion already knows (stop_wording.py) is not repeated
here: intent.py reads those patterns directly, so the inbox and ingestion agree on the same words. The
tables below only add what a person writes and ingestion does not need (it would never suppress on them).
"""

from __future__ import annotations

DECISIVE, STRONG, CLEAR, WEAK, HINT = 0.95, 0.90, 0.80, 0.65, 0.50

# Between phrases of equal strength, the earlier category here wins: a request to stop outranks a refusal it
# contains, a referral outranks the "not me" around it, a booked meeting outranks the interest that led to it.
CATEGORY_ORDER = (
    "unsubscribe", "out_of_office", "wrong_person", "meeting", "not_interested", "interested", "other",
)

# A word of these, up to NEGATION_WORDS words before a phrase in the same clause, negates it: a negated
# interest ("not really interested", "no me parece interesante") is a refusal; any other negated phrase counts
# for nothing ("please don't unsubscribe me").
NEGATION_WORDS = 3
NEGATIONS = {
    "en": r"not|n't|never|no|hardly|neither|nor",
    "de": r"nicht|kein|keine|keinen|keiner|nie|niemals|weder",
    "fr": r"pas|ne|n'|jamais|ni|aucun|aucune",
    "es": r"no|nunca|ni|tampoco|jamás",
    "nl/it/pt": r"niet|geen|non|não|nao|nem",
}
# Words after which, in the same sentence, the reply says what it really means ("thanks, but we're all set").
CONTRAST = r"but|however|though|aber|jedoch|allerdings|doch|mais|cependant|toutefois|pero|sin embargo|aunque"
CONTRAST_BONUS = 0.05

# Small words that tell the language of a reply nothing decided (only to fill Suggestion.language).
STOPWORDS = {
    "en": "the and you is to we i this for with thanks please are our my not be it have",
    "de": "und ich sie nicht das ist wir mit bitte danke für ihre uns der die den ein eine mir mich mehr",
    "fr": "je vous nous est pas les des une merci pour avec le la mon votre sur ce",
    "es": "que usted para gracias con los una por está nos el mi su es de la las me más muy pero",
    "nl": "ik niet het een dat wij bedankt voor met van is ons jullie graag",
    "it": "sono non grazie per il che della siamo ci mi la di un una",
    "pt": "não obrigado você para com uma estou meu até de que é o os",
}

INTERESTED = {
    "en": {
        CLEAR: (
            r"(tell|show) (me|us) more", r"(i|we)('m| am|'re| are|'d be| would be|'ll be) (very |really |quite |"
            r"definitely |potentially |possibly |certainly )?(interested|keen|curious)", r"keen to (hear|learn|see)",
            r"send( me| us| over| it over)?( some| a bit| the)?( more)? (info|information|details|pricing|prices"
            r"|a quote|a proposal|the deck|a deck|the one pager|the one-pager|case studies|a brochure)",
            r"(share|send)( me| us)? (your|the) (pricing|prices|price list|rates|deck)",
            r"(can|could) you (send|share|show)", r"how much (does|would|is|will)", r"what (does|would) (it|this) cost",
            r"pricing (tiers|plans|options)", r"let's (talk|chat|connect|set up|schedule|find a time|hop on|jump on)",
            r"(happy|glad|open) to (jump on|hop on|have|take|chat|talk|learn|hear|connect|a)",
            r"(i|we)( would|'d) love to (learn|hear|see|chat|talk)", r"open to a (conversation|call|chat)",
            r"(what|when)('s| is| does) your availability( look like)?", r"when are you (free|available)",
            r"(can|could) (we|you) (set up|schedule|book|arrange) a (call|demo|meeting)", r"(show|give) us a demo",
            r"send (me|us) (a couple of |some )?(times|slots)", r"(the )?timing is (good|great|right)",
            r"what (would|does) (the )?(onboarding|next step|implementation)", r"what('s| is| are) the next steps?",
            r"(yes|yeah|sure)[,!.]? (please|let's)", r"interested in (a|the|learning|seeing|hearing)",
            # A time proposed (not yet confirmed: that is a meeting booked).
            r"how about {day}", r"(does|would|could) {day}( at {time})? work",
            r"(call|ring|phone) me", r"when can we (talk|chat|speak|meet)", r"(can|could|shall) we (talk|chat|speak)",
            r"(i'm|i am|we're|we are) (free|available) ({day}|tomorrow|next|this|on)", r"walk (me|us) through",
            r"exactly what (we|i) (need|want|were looking for)", r"(like|love|want) to (try|test) it",
            r"(a|the) (free )?(trial|pilot|test account|trial account)", r"open to (hearing|learning|chatting|talking)",
            r"send (it )?over whatever", r"pass (this|it) (on )?to my (team|boss)", r"i'm listening",
            r"(put together|prepare|send (me|us)) (a|an) (proposal|quote|offer)", r"curious (how|about|to)",
            r"connect me with (a|one of your) (customer|client|reference)s?", r"(references|case study)",
            r"(your|a) (calendar|booking|scheduling) link", r"does (it|this) (support|work with|integrate)",
            r"(know|hear|learn) more", r"put something together", r"(send|share) .{0,60}contract",
            r"(numbers|results|data) on|uplift",
        ),
        WEAK: (
            r"sounds (good|great|interesting|useful|promising)", r"looks (promising|interesting|good|great)",
            # A question about the product or its terms is interest: what it costs, how it fits, how to try it.
            r"(cost|costs|price|prices|pricing|quote|per seat|per user|integrations?|trial|onboarding)",
            r"(gdpr|soc 2|iso 27001|compliant|dpa)",
            r"(looks|sounds) (relevant|useful)", r"interesting",
            r"we('ve| have) been looking for", r"why not", r"yes", r"case studies", r"interested|intrested|intersted",
            r"let's (do it|go)", r"keen",
        ),
    },
    "de": {
        CLEAR: (
            r"(wir|ich) (hätten|habe|haben|hätte) (großes |grundsätzlich )?interesse",
            r"(erzähl|erzählen sie) (mir|uns) mehr", r"gerne? mehr (darüber )?(erfahren|hören|infos|informationen)",
            r"(schicken|senden|schick) (sie |du )?(mir |uns )?(gerne |gern |mal |doch |bitte )*"
            r"(ein paar |mehr |weitere )?(infos|informationen|unterlagen|ein angebot|preise|eine preisübersicht)",
            r"was kostet", r"(können|könnten) sie (uns|mir) ein angebot", r"(interessiert|intressiert) mich",
            r"(wir|ich) (sind|bin) interessiert",
            r"(gerne|lassen sie uns|können wir) (kurz |nächste woche )*(telefonieren|sprechen|austauschen)",
            r"wann (passt es|haben sie zeit|hätten sie zeit)", r"(schlagen|nennen) sie .{0,20}termine vor",
            r"wie würde (die einführung|das) .{0,20}aussehen", r"offen dafür",
            r"(rufen sie mich|ruf mich|rufen sie uns) .{0,30}an", r"zukommen lassen", r"gerne? (ausprobieren|testen)",
            r"(einen )?termin (machen|vereinbaren|ausmachen|finden)", r"wann können wir",
            r"lassen sie uns .{0,30}(sprechen|telefonieren|austauschen)", r"(schick|schicken sie) (mir|uns) .{0,20}"
            r"(unterlagen|infos|informationen|referenzen|angebot)", r"(kostenlos )?testen", r"referenzen",
        ),
        WEAK: (
            r"(klingt|hört sich) (gut|spannend|interessant) an", r"klingt (gut|spannend|interessant)", r"interessant",
            r"spannend", r"interesse", r"demo", r"(preis|preise|preislich|kosten|testzugang|testphase|testversion)",
            r"(dsgvo|konform|gerne weiter|referenz\w*)", r"wie läuft .{0,30}ab",
        ),
    },
    "fr": {
        CLEAR: (
            r"(ça|cela|votre proposition) (m'|nous )intéresse", r"(je suis|nous sommes|serions|serais) intéressée?s?",
            r"(dites|dis)( moi| m'en| nous)( en)? plus", r"ça me parle", r"en savoir plus",
            r"(envoyez|envoyer|faire parvenir)( moi| nous)?"
            r" (une |un |la |vos |plus d'|des )?(documentation|doc|tarifs|devis|proposition|informations|infos|"
            r"plaquette)", r"(quels sont|connaître) vos tarifs", r"combien (ça|cela) coûte", r"combien coûte",
            r"on peut en parler", r"(avec plaisir|volontiers) pour (un|une) (échange|appel|démo|rendez vous)",
            r"quelles sont vos disponibilités", r"(tu es|vous êtes) dispo", r"proposer (deux|quelques) créneaux",
            r"comment (ça|cela) (marche|fonctionne)",
            r"(appelez moi|m'appeler|me rappeler|appelez nous)", r"(je suis|nous sommes) partante?s?",
            r"quand (pouvons nous|peut on) (échanger|parler|se parler)", r"(faire|avoir) un essai",
            r"(je suis|suis) disponible", r"rappelez moi", r"curieu(x|se) d'en savoir", r"en savoir davantage",
            r"(envoyez|envoyer)( moi| nous)? une présentation", r"je veux bien",
        ),
        WEAK: (
            r"(a l'air|semble|c'est) intéressant", r"intéressant", r"pourquoi pas", r"démo",
            r"(prix|tarifs?|coût|essai|devis|rgpd|documentation|références)",
        ),
    },
    "es": {
        CLEAR: (
            r"(me|nos) (interesa|interesaría)", r"(estoy|estamos) (muy )?interesad[oa]s?", r"cuént(ame|enos) más",
            r"(envi|mand)(ar|e|en|a)(me|nos)? (más |un |una |los )?(información|info|precios|presupuesto|"
            r"propuesta|tarifas)", r"cuánto (cuesta|vale|costaría)", r"hablemos", r"podemos hablar",
            r"saber más", r"qué disponibilidad", r"(ver|agendar|tener) una (demo|llamada|reunión)",
            r"(proponer|propón|proponga) (un par de|algunos) horarios", r"cómo funciona",
            r"abiertos a (conocer|hablar|escuchar)",
            r"(llámeme|llámame|me (puede|puedes) llamar|llamarme)", r"(me|nos) gustaría (probar|ver|saber|conocer)",
            r"cuándo podemos (hablar|vernos|reunirnos)", r"(más|mas) detalles", r"recibir (más )?información",
            r"(un hueco|una llamada|una reunión)",
        ),
        WEAK: (
            r"suena (bien|interesante)", r"me parece (buena idea|interesante)", r"interesante", r"demo",
            r"(precio|precios|coste|costo|cuesta|costaría|prueba|presupuesto|tarifas?|referencia\w*)",
        ),
    },
}

MEETING = {
    "en": {
        STRONG: (
            r"^(accepted|updated invitation accepted)\s*:", r"(i|i've|i have|just|we've|we have) (re)?booked",
            r"booked (a|the|us a|you a|in a) (slot|time|call|meeting|demo)", r"accepted (the|your) (invite|invitation)",
            r"(call|meeting|demo|chat)( is)? (confirmed|booked|scheduled|set) for", r"confirmed for {day}",
            r"(just )?sent (you )?(a|an|the) (calendar )?(invite|invitation)", r"(re)?booked (it )?for {day}",
            r"(grabbed|booked|reserved|blocked|picked) (a|the) (time|slot|spot)", r"locked in for",
            r"(in|into) (the|my|our) (diary|calendar) for", r"invite accepted", r"(done|ok|great)[,!.]? booked",
            r"^confirmed[.!]", r"added (it )?to my calendar",
        ),
        CLEAR: (
            r"see you (on )?({day}|tomorrow|then|next week|on the)", r"talk (to you )?(on )?({day}|then|tomorrow)",
            r"(got|received) the invite", r"looking forward to (our|the) (call|chat|meeting|demo) (on|tomorrow|{day})",
            r"{day},? (at )?{time} (works|is fine|is perfect|suits)", r"{day} (at )?{time}( \w+)? works for me",
            r"{time}( \w+)? on {day} works", r"(works|fine|perfect) for me[.!]? (i've|i have) accepted",
            r"(speak|talk|see you|chat) (then|soon then)", r"{time} tomorrow (is|works)",
        ),
        WEAK: (
            r"{day},? (at )?{time}( then)?",
        ),
    },
    "de": {
        STRONG: (
            r"^angenommen\s*:", r"termin .{0,40}(gebucht|eingetragen|bestätigt)", r"ist bestätigt",
            r"(habe|hab) .{0,40}(kalendereinladung|einladung) .{0,40}geschickt", r"einladung angenommen",
        ),
        CLEAR: (
            r"(dann|also|ok|gut|prima|super|passt)[,!.]? bis ({day}|morgen)", r"{day},? (um )?{time} passt",
            r"freue mich auf (unser|das) (gespräch|telefonat|treffen|call)", r"termin steht",
            r"(einladung|termin) .{0,30}angenommen", r"(habe sie|habe ihn) angenommen",
            r"(wir sehen uns|sehen wir uns) (am )?({day}|morgen)", r"eingetragen",
            r"\w*einladung .{0,40}(angenommen|akzeptiert)", r"bestätige (den|unseren|das) (termin|gespräch)",
            r"bis (morgen|{day}) um {time}",
            r"(gebucht|reserviert)",
            r"ich trage (es|das|den termin) (mir )?ein",
        ),
    },
    "fr": {
        STRONG: (
            r"^accepté\s*:", r"(j'ai|nous avons) réservé (un|le) créneau", r"rendez vous .{0,30}(est )?confirmé",
            r"(envoyé|envoyer) une invitation pour", r"invitation acceptée", r"c'est noté pour",
        ),
        CLEAR: (
            r"(à|a) ({day}|demain)( {time})?( alors)?[ .!]", r"au plaisir d'échanger (demain|{day})",
            r"{day},? {time} (me )?convient", r"bien reçu l'invitation", r"on se voit",
            r"(pris|réservé|bloqué) (un )?(rendez vous|créneau)", r"(reçue|bien reçue) et acceptée",
            r"accepté (votre |l'|cette )invitation", r"noté dans (mon|notre) agenda",
        ),
    },
    "es": {
        STRONG: (
            r"^aceptado\s*:", r"(he|hemos) reservado", r"queda (confirmada|confirmado|agendado|agendada)",
            r"(enviar|envié|enviado) una invitación para", r"invitación aceptada", r"agendado para",
        ),
        CLEAR: (
            r"nos vemos (el )?({day}|mañana|pronto)", r"hasta (mañana|el {day})", r"recibí la invitación",
            r"{day} a las {time} (me )?(va|viene) bien", r"(reservé|agendé|bloqueé) (una|un|la|el)",
            r"aceptado la invitación", r"te confirmo", r"(le|les) confirmo", r"anotado",
        ),
        WEAK: (
            r"(el )?{day} a las {time}( entonces)?",
        ),
    },
}

_LATER_EN = (
    r"(in|after|until|for|next|the next|the new|a few|couple of|\d+|three|six) (q[1-4]|quarter|year|months?"
    r"|spring|summer|autumn|fall|winter|new year|{month})"
)
NOT_INTERESTED = {
    "en": {
        STRONG: (
            r"not interested", r"no (longer )?interest", r"(not|don't|do not) (want|wish) to (move forward|proceed)",
            r"(decided|chosen) not to (move forward|proceed|pursue|go ahead)", r"(we'll|we will|i'll|i will) pass",
            # Put off to later: nothing is wanted now (intent.py's docstring says why this is not "interested").
            r"not (right )?now", r"not at (the|this) (moment|time)", r"not this (year|quarter|month)",
            r"(isn't|is not|not) for us", r"not in the market", r"(have to|must|will|'ll) decline",
            r"not a good time", r"(it's|it is) a no", r"under contract", r"not (something|anything) we('re| are)"
            r" (going to|looking to|planning to) (pursue|do|buy)", r"not (buying|purchasing)",
            r"budgets? (is|are) frozen",
        ),
        CLEAR: (
            r"(we're|we are|i'm|i am) (all )?(set|good|covered)( for now)?", r"no,? thank(s| you)",
            r"(already|currently) (have|use|work with|using) (a|an|our|another)", r"happy with (our|the|them)",
            r"not (a|the right) (fit|priority|match)", r"isn't a (priority|fit)", r"not a priority",
            r"(don't|do not|won't) need", r"no need", r"(don't|do not) have (the )?budget", r"no budget",
            r"maybe (later|" + _LATER_EN + r")",
            r"(reach out|circle back|check back|get back to (me|us)|follow up|try again|ask (me|us) again|ping me|"
            r"touch base)( again| with (me|us))? " + _LATER_EN, r"timing isn't (great|right|good)",
            r"^(no|nope|nah|nein|non|nee|não)[.!]*$",
            r"(we )?handle (all )?(this|that|it|outreach|everything) in house",
            r"not looking for", r"(won't|will not) be (moving forward|proceeding)",
            r"(signed|committed|locked into|locked in) .{0,40}(contract|another vendor|another provider|with)",
            r"(don't|do not) have the (bandwidth|capacity|time|resources)", r"try (me|us) again",
            r"(so|then) no[.!]*$", r"too expensive", r"(price|cost) is too high", r"(isn't|is not|not) relevant",
            r"revisit (this|it)? (in|next|after)", r"not needed", r"too small",
        ),
    },
    "de": {
        STRONG: (
            r"kein(e|en)? interesse", r"kein bedarf", r"nicht interessiert", r"interessiert (uns|mich) (leider )?nicht",
            r"(aktuell|derzeit|momentan|im moment|zurzeit) (leider )?(nicht|kein)",
            r"(entschieden|beschlossen),? .{0,40}nicht weiter", r"nicht weiter(zu)?verfolgen",
        ),
        CLEAR: (
            r"(bereits|schon) (gut )?(versorgt|aufgestellt|einen anbieter|einen dienstleister|eine lösung)",
            r"arbeiten (bereits|schon) mit", r"(sind|bin) (sehr )?zufrieden", r"nein,? danke", r"keine priorität",
            r"passt (leider )?nicht",
            r"kein budget", r"(machen|erledigen) (das|wir) (alles )?(intern|selbst)",
            r"(melden sie sich|kommen sie) (gerne |gern )?(im|in|nächstes|nach|zu)",
            r"vielleicht (später|im|in|nächstes|nach)", r"zu einem späteren zeitpunkt", r"kein thema",
            r"(dankend )?ablehnen", r"andere prioritäten", r"suchen (derzeit |aktuell )?nichts", r"nicht für uns",
            r"(sind|bin) .{0,40}zufrieden", r"zu teuer", r"nicht relevant", r"verzichten", r"kein geld",
            r"passt .{0,15}nicht", r"gegen .{0,30}entschieden",
            r"(schon|bereits) (anders )?gelöst", r"^\W*(jetzt|gerade|jetzt gerade|momentan|aktuell) nicht",
            r"in einem (halben )?jahr",
        ),
    },
    "fr": {
        STRONG: (
            r"pas intéressée?s?", r"(ne|n') ?(nous |m')intéresse (pas|plus)", r"ne souhaitons pas donner suite",
            r"(pas|plus) d'intérêt", r"pas (pour le moment|pour l'instant|maintenant)",
        ),
        CLEAR: (
            r"(déjà|deja) (équipés|équipé|une solution|un prestataire|un fournisseur|tout ce qu)",
            r"non,? merci", r"pas (une|la|notre) priorité",
            r"pas besoin", r"pas de budget", r"(en |à l')interne", r"plus tard",
            r"peut être (en|à|l'année|après|plus tard)", r"revenir vers nous (l'année|dans|en|après)",
            r"l'année prochaine", r"l'an prochain", r"ne correspond pas", r"pas le temps", r"pas le bon moment",
            r"décliner", r"(utilisons|avons) déjà",
            r"(en )?sommes (très )?satisfaits", r"pas pour nous", r"trop cher", r"pas concernée?s?",
            r"(aucun|pas de) besoin", r"pas (donner )?suite", r"déjà (avec|un|une)",
            r"revenez vers (moi|nous) (dans|en|l'année|après)",
        ),
    },
    "es": {
        STRONG: (
            r"no (me|nos) interesa", r"no (estoy|estamos) interesad[oa]s?", r"(decidido|decidimos) no seguir",
            r"ningún interés", r"(ahora|por ahora|de momento|por el momento)( mismo)? no",
        ),
        CLEAR: (
            r"ya (tenemos|contamos con|trabajamos con|estamos cubiertos)", r"no,? gracias",
            r"no es (una )?prioridad",
            r"más adelante", r"el año que viene", r"el próximo año", r"no (lo )?necesitamos",
            r"no tenemos presupuesto", r"(todo )?internamente", r"en este momento no",
            r"no es (buen|el) momento", r"declinar", r"ya (usamos|utilizamos)", r"(estamos )?satisfechos",
            r"no es para nosotros", r"demasiado caro", r"contentos con",
            r"(decidido|decidimos) no (avanzar|continuar)", r"no encaja", r"(vamos a|voy a) pasar",
        ),
    },
}

# Dutch, Italian, Portuguese and Polish have no tables of their own (the model reads them), but for the plain
# refusal: a short "Não me interessa." is where the model, which reads "interest" in it, errs most.
NOT_INTERESTED |= {
    "nl": {STRONG: (r"interesseert (me|mij|ons) (echt |helemaal |verder )?niet", r"(niet|geen) geïnteresseerd",
                    r"geen interesse")},
    "it": {STRONG: (r"non (mi|ci) interessa(no)?", r"non (sono|siamo) interessat[oaie]", r"nessun interesse")},
    "pt": {STRONG: (r"não (me|nos) interessa(m)?", r"não (estou|estamos) interessad[oa]s?",
                    r"não (tenho|temos) (nenhum |qualquer )?interesse", r"sem interesse")},
    "pl": {STRONG: (r"nie interesuje (mnie|nas)", r"(mnie|nas) (to )?nie interesuje", r"brak zainteresowania",
                    r"nie (jestem|jesteśmy) zainteresowan\w*")},
}

WRONG_PERSON = {
    "en": {
        DECISIVE: (
            r"(i'm|i am) not the (right|correct|best|appropriate) (person|contact)",
            r"(got|have|reached|contacted|emailed) the wrong (person|contact)", r"wrong person",
            r"no longer (works|working) (at|for|here|with)", r"(is|are) no longer with",
            r"(has|have) left (the company|us|\w+ last)", r"not my (area|department|call|responsibility)",
            r"(i'm|i am) not (in charge|responsible)", r"(i|we) (don't|do not) (deal with|handle|decide)",
        ),
        STRONG: (
            r"(i've|i have|i) forwarded (your|this|the) (email|e-mail|message|note)",
            r"(you|you'd|you may|you might) (want|need|be better) (to )?(reach out|speak|talk|contact)",
            r"(better|best) to (speak|talk) (with|to)", r"would be the (one|person) to (talk|speak)",
            r"(adding|copying|cc'ing|looping in|cc) (in )?(my colleague|her|him|{name})",
            r"(my|our) (colleague|coworker|boss|manager|head of \w+|cto|ceo|coo|cmo)( \w+){0,4},? (who )?(handles|"
            r"runs|owns|is responsible|might|may|would|took over|is the)",
            r"talk to {name}", r"(please )?(contact|reach out to|write to|try) ({email}|{name}|our)",
            r"wrong (guy|man|woman|contact|department|email|address)", r"(i|i've|i have) left {name}",
            r"that would be {name}", r"i think you want (our|to talk|{name})", r"(she|he) handles",
            r"(can't|cannot) help (you )?(here|with this)", r"no longer (at|with|part of|employed)",
            r"moved (to|into) a (different|new) (role|team|position|company)", r"(i'm|i am) not involved",
            r"the new (\w+ )?(lead|contact|owner|person|manager|head) is", r"passing (this|it) (along|on) to",
            r"(outside|not within|not in) my remit", r"forwarded (this |it )?to (my|our|{name})",
            r"moved (teams|roles|departments)", r"now owns (this|it)",
        ),
    },
    "de": {
        DECISIVE: (
            r"nicht (der|die) (richtige|zuständige) (ansprechpartner|ansprechpartnerin|person)",
            r"nicht zuständig", r"falsche(r|n)? ansprechpartner", r"die falsche person",
            r"(bei mir|da sind sie) (leider )?falsch",
            r"nicht mehr (in unserem|im|bei|für)", r"hat (das unternehmen|die firma|uns) .{0,20}verlassen",
        ),
        STRONG: (
            r"(ihre|deine) (mail|e-mail|nachricht|anfrage) an .{0,40}weitergeleitet",
            r"(wenden sie sich|sprechen sie) (bitte |lieber )?(an|mit)",
            r"(der|die) richtige ansprechpartner(in)? wäre",
            r"bitte kontaktieren sie ({email}|frau|herrn?|unsere?n?|{name})", r"in cc gesetzt",
            r"zuständig ist", r"(leite|gebe) .{0,40}weiter", r"(arbeite|bin) nicht mehr (bei|für|in)",
            r"weitergeleitet",
        ),
        CLEAR: (r"meine kollegin|mein kollege",),
    },
    "fr": {
        DECISIVE: (
            r"pas (la bonne personne|le bon interlocuteur|la bonne interlocutrice|le bon contact)",
            r"trompée? d'interlocuteur",
            r"(ne|n') (m'occupe|gère|suis) pas (de|en charge)", r"a quitté (la société|l'entreprise|le groupe)",
            r"ne (fait|fais) plus partie", r"mauvaise personne",
        ),
        STRONG: (
            r"(j'ai )?transféré votre (message|mail|e-mail|courriel)", r"adressez vous (plutôt )?à",
            r"(contactez|écrire à|écrivez à) (plutôt )?({email}|{name}|le service|notre)", r"mieux placée? pour",
            r"(ma|mon) (collègue|collaborateur|collaboratrice) .{0,40}(gère|s'occupe|en copie|mieux)",
            r"je (la|le) mets en copie", r"je lui transmets", r"contacter (ma|mon) (collègue|collaborat\w+)",
            r"pas moi qui", r"voyez avec",
            r"(n'est|ne travaille) plus (chez|avec|dans)", r"(transmis|transféré) votre (demande|message|mail)",
            r"la personne (concernée|en charge|responsable)", r"(fais|ferai) suivre", r"la bonne personne",
        ),
    },
    "es": {
        DECISIVE: (
            r"no soy la persona (adecuada|indicada|correcta)", r"equivocado de persona", r"persona equivocada",
            r"ya no trabaja", r"(dejó|ha dejado) la empresa", r"no me encargo", r"no llevo (estos|este)",
        ),
        STRONG: (
            r"(he|hemos) reenviado (tu|su) (correo|mensaje|email)", r"(hable|habla|contacte|contacta) con",
            r"te pongo en copia", r"(puede|puedes) escribir a", r"no soy yo quien", r"pregunte (en|a|con)",
            r"ya no está en la empresa", r"(pasado|reenviado|transmitido) (su|tu) (mensaje|correo)",
            r"la persona (responsable|encargada|adecuada)", r"(se lo|lo|te lo) paso a",
            r"no es mi (área|departamento|responsabilidad)", r"ya no (trabajo|trabaja|está|estoy) (en|con)",
            r"no me corresponde",
        ),
        CLEAR: (r"(mi|nuestro|nuestra) (compañer[oa]|responsable)",),
    },
}

OUT_OF_OFFICE = {
    "en": {
        STRONG: (
            r"(i'm|i am) (away|travelling|traveling|on vacation|on holiday|on leave|on parental leave|at a conference)"
            r"( \w+){0,3} (until|till|through|this week|and will|with)", r"out of (the )?office until",
            r"limited (e-?mail )?access( to e-?mail)?", r"(office|offices) (is|are|will be) closed",
            r"back in the office (on|from)", r"will (reply|respond) (when|after|as soon as) i('m| am)? (back|return)",
            r"on (sabbatical|sick leave|medical leave|maternity leave|paternity leave)", r"not monitoring (this|my)",
            r"on my return", r"(away|out|absent) (until|till|through) (the )?\d+\w*",
            r"(travelling|traveling) .{0,40}until", r"delays? in my (replies|responses)",
            r"on a business trip (until|and|this)",
        ),
    },
    "de": {
        STRONG: (
            r"nicht im büro", r"im urlaub", r"in elternzeit", r"auf dienstreise", r"(nur )?eingeschränkt erreichbar",
            r"(bin|sind) .{0,30}wieder (erreichbar|im büro|da|für sie da)", r"büro ist .{0,30}geschlossen",
            r"keinen zugriff auf (meine )?e-?mails", r"auf (einer )?(messe|konferenz|geschäftsreise)",
            r"erst (ab|nach) .{0,20}beantworten", r"abwesend bis",
        ),
    },
    "fr": {
        STRONG: (
            r"absente? du bureau", r"en congés?( maternité| paternité| parental)?", r"en déplacement",
            r"de retour le", r"accès limité à mes (e-?mails|messages)", r"(bureaux|bureau) (sont|est) fermés?",
            r"dès mon retour", r"en vacances", r"absente? jusqu", r"en (formation|séminaire) (toute|jusqu|cette)",
        ),
    },
    "es": {
        STRONG: (
            r"fuera de la oficina", r"de vacaciones", r"(estoy|me encuentro) de baja", r"de viaje",
            r"de baja (médica|por (maternidad|paternidad|enfermedad))", r"estaré ausente",
            r"acceso limitado al correo", r"(oficinas|oficina) (permanecerán|estarán|está|están) cerradas?",
            r"a mi regreso", r"volveré el", r"ausente hasta", r"(en|de) (una )?(feria|conferencia) .{0,30}correo",
            r"apenas (leo|reviso) el correo", r"(fuera|ausente) hasta",
        ),
    },
}

UNSUBSCRIBE = {
    "en": {
        DECISIVE: (
            r"delete (my|our) (data|details|personal data|e-?mail address)", r"stop contacting (me|us)",
            r"(like|want|wish|need) to (unsubscribe|be removed|opt out)", r"unsubscribe (me|us)",
            r"take (me|us) off (your|the|this) (list|mailing list)", r"remove (my|our) e-?mail from",
            r"remove (me|us|our \w+|my \w+)( \w+)? from (your|the|this|all)",
            r"(do not|don't|no longer) (wish|want) to receive", r"take (me|us)( and my \w+)? off",
        ),
        STRONG: (r"remove me", r"leave me alone", r"(how many times|i've asked)",),
    },
    "de": {
        DECISIVE: (
            r"aus (ihrem|dem|eurem) verteiler", r"(meine|unsere) daten (zu )?löschen", r"tragen sie (mich|uns)"
            r" .{0,10}aus", r"nicht mehr (zu )?(kontaktieren|anschreiben)",
            r"(kontaktieren|schreiben|mailen) sie (mich|uns|mir) (bitte )?nicht mehr",
            r"hören sie auf,? (mir|uns) zu schreiben", r"melden sie (mich|uns) ab",
            r"entfernen sie (mich|uns|meine adresse|meine daten)",
            r"keine (weiteren )?(e-?mails|nachrichten|mails) (mehr|von ihnen)",
        ),
    },
    "fr": {
        DECISIVE: (
            r"(me|nous) retirer de (votre|la|vos)", r"supprimer (mes|nos) données", r"supprimer mon adresse",
            r"ne plus (me|nous) contacter", r"plus recevoir", r"arrêtez de (m'|nous )écrire",
            r"(retirez|supprimez|effacez) (moi|mon adresse|mes coordonnées|nous)",
            r"ne plus (me |m'|nous )(contacter|écrire|envoyer)",
            r"^\W*stop\W*$",
        ),
    },
    "es": {
        DECISIVE: (
            r"(denme|dame|darme|dadme|darnos|nos) de baja", r"(elimínenme|eliminadme|bórrenme|borradme)",
            r"(eliminen|elimines|borren|borres) (me|mis datos|nuestros datos)",
            r"me eliminen", r"dejen de (escribirme|enviarme|contactarme)",
            r"no (me|nos) vuelvan a (contactar|escribir)",
            r"no quiero (recibir )?más (correos|emails|mensajes|e-mails)", r"no quiero recibir más",
            r"(borren|eliminen|borrar) (mi|mis) (dirección|correo|datos)", r"(sáquenme|sacadme|quítenme) de",
            r"^\W*baja\W*$",
        ),
    },
}

# Replies that look like one of the above and are not: decided as Other, by the words that show it.
OTHER = {
    "en": {
        # A question about taking *other* people off something else is no request to stop writing to this one.
        1.0: (
            r"how (do|can|would|could) (i|we) (unsubscribe|remove|opt out) (one of |some of |all )?(my|our|the|a|an)"
            r"( \w+)? (team|users?|staff|employees?|customers?|colleagues?|clients?|members?)"
            r"(?! from (your|these|this) (list|emails|mailing))",
        ),
        WEAK: (
            r"who are you", r"how did you get my (address|e-?mail)", r"what is this (regarding|about)",
            r"is this spam",
        ),
    },
    "de": {WEAK: (r"woher haben sie", r"worum geht es")},
    "fr": {WEAK: (r"qui êtes vous", r"comment avez vous eu", r"de quoi s'agit il")},
    "es": {WEAK: (r"quién es usted", r"de dónde ha sacado", r"de qué se trata")},
}

# Words that belong to one answer, for replies no phrase above decides ("Got a one-pager I can watch?").
HINTS = {
    "interested": {
        "en": r"pilot\w*|trial|demo|one pager|video|deck|brochure|set ?up|setup|implementation|onboarding|integrat\w*"
              r"|switching|proposal|quote|offer|seats|licen[cs]es|intrigued|curious|how long|is that possible"
              r"|what times|(give|call) me a (ring|call)|i could do|let's",
        "de": r"pilot\w*|test\w*|unterlagen|angebot\w*|einrichtung|dauert|gespräch|telefon\w*|zurückrufen|rückruf"
              r"|anrufen|neugierig|unterscheidet|integr\w*|reden|lizenzen",
        "fr": r"pilote|essai|plaquette|brochure|présentation|offre|mise en place|intègre|intégration|créneaux"
              r"|disponible|appel|rappeler|échangeons|curieu\w*|envisageable",
        "es": r"piloto|prueba|folleto|vídeo|video|presentación|oferta|implementación|integra\w*|horarios|hueco"
              r"|llamas|llámame|llamada|hablemos|cuánto tarda|licencias",
    },
    "not_interested": {
        "en": r"stick with|stay with|no appetite|heads down|change vendors|solved (this|it)|right fit|not for me"
              r"|going to pass|(don't|do not) have a need",
        "de": r"bleiben bei|keine kapazität\w*|absagen|aber nein|keine zeit",
        "fr": r"restons (avec|sur)|pas d'actualité|relancez moi (en|dans|l'année)",
        "es": r"no aplica|seguimos con|(esa|ninguna) necesidad|declinamos|vuelva a escribirme (en|dentro)",
    },
    "wrong_person": {
        "en": r"retired|no longer in charge|that's now {name}|wrong {name}",
        "de": r"falsche ansprechpartnerin|ausgeschieden|entscheide nicht ich|weitergegeben",
        "fr": r"quitté (la société|l'entreprise|le groupe)|voyez (plutôt )?avec|(je )?transmets votre",
        "es": r"no es conmigo|dejé la empresa|transmito (su|tu)",
    },
    "out_of_office": {
        "en": r"annual leave|will not be forwarded|automatic reply|(for|in case of) urgent",
        "de": r"seminar|in dringenden fällen|vertreter(in)?",
        "fr": r"sur un salon|en cas d'urgence|pour toute urgence",
        "es": r"congreso|permiso de (paternidad|maternidad)|estaré fuera|para urgencias",
    },
    "meeting": {
        "en": r"confirmed (the|our)|received and accepted|speak {day}|see you at {time}|confirming our",
        "de": r"steht im kalender|dann am {day} um {time}",
        "fr": r"créneau réservé",
        "es": r"hueco reservado",
    },
    "unsubscribe": {
        "de": r"(löschen|entfernen) sie .{0,20}(daten|adresse|kontakt)|keine werbung mehr",
        "fr": r"plus de sollicitations|supprimer mon e-?mail",
        "es": r"no quiero que me contacten",
    },
}

TABLES = {
    "unsubscribe": UNSUBSCRIBE,
    "out_of_office": OUT_OF_OFFICE,
    "wrong_person": WRONG_PERSON,
    "meeting": MEETING,
    "not_interested": NOT_INTERESTED,
    "interested": INTERESTED,
    "other": OTHER,
}
