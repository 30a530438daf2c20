"""Writes ../more-replies.jsonl: replies for holding the Pipecat presets to
Pipecat's sentence aggregation on what users vary (abbreviations, numbers,
quotes, ellipses, lists, other scripts' punctuation, Markdown).

Two sets, each reply tagged:

- "tune": built here from sentence templates with seeded random fillers
  (the Go port of sentencex was fixed while looking at these);
- "holdout": written by hand as assistant replies, before the port was run
  on them; nothing was changed after they were run.

Usage: python3 more_replies.py, then `go test ./tts -run TestChunkingPresets
-update` adds the tokens, then gen/pipecat_sentencex.py records Pipecat.
"""

import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))

NAMES = ["Patel", "Nguyen", "García", "O'Brien", "Smith", "Kowalski", "Okafor", "Lee"]
TITLES = ["Dr.", "Mr.", "Mrs.", "Ms.", "Prof.", "Capt.", "Sen.", "Rev.", "Gen.", "Sgt."]
PLACES = ["St. Louis", "Mt. Hood", "Ft. Worth", "Washington, D.C.", "the U.S.", "the U.K.", "Main St.", "5th Ave."]
MONTHS = ["Jan.", "Feb.", "Mar.", "Apr.", "Aug.", "Sept.", "Oct.", "Nov.", "Dec."]
STARTERS = ["The", "It", "This", "We", "You", "Then", "However", "Please", "Also", "That", "There", "So"]
PLAIN = ["Alex", "Tomorrow", "Nothing", "Everything", "Parking", "Dinner", "Your order", "Boston"]
ENDINGS = [
    "is on {month} {day} at {hour} {ampm}",
    "works at {company}",
    "costs ${dollars}.{cents}",
    "lives near {place}",
    "arrives around {hour}:{minute} {ampm}",
    "earned a {degree} in {year}",
    "is {feet} ft. {inches} in. tall",
    "weighs about {pounds} lb.",
    "ships version {major}.{minor}.{patch}",
    "scored {score} out of 10",
]
COMPANIES = ["Acme Inc.", "Globex Corp.", "Initech Ltd.", "Wayne Bros.", "Stark Co."]
DEGREES = ["Ph.D.", "M.D.", "B.A.", "M.B.A.", "J.D.", "B.Sc."]
AFTER = [
    "{starter} {rest}.",
    "{plain} {rest}.",
    "{lower} {rest}.",
    "{title} {name} {rest}.",
]
RESTS = ["will call you back", "has more details", "is all set", "can wait", "was confirmed", "should be fine"]
LOWER = ["and then", "but", "so", "which", "because"]

QUOTES = [
    'She said, "{s}" and left.',
    'He told me: "{s}" {starter} {rest}.',
    "The sign read 'Closed for the day.' {starter} {rest}.",
    "“{s}” {starter} {rest}.",
    "They called it ‘{w}’. {starter} {rest}.",
    '"{s}," she added. {starter} {rest}.',
    "He asked, “{q}” {plain} {rest}.",
    "« {s} » {starter} {rest}.",
    "„{s}“ {starter} {rest}.",
    "Don't say '{w}.' {starter} {rest}.",
]
QUOTED = ["Stop right there.", "We open at 9 a.m. sharp.", "Call Dr. Lee.", "It's fine. Really.", "Thanks!", "No way!"]
QUESTIONS = ["Are you sure?", "Is it ready?", "Why now?"]
WORDS = ["magic", "Plan B", "the usual", "Mr. Fix-It", "okay"]

ELLIPSES = [
    "Well... {starter} {rest}.",
    "Well... {lower} {rest}.",
    "Hmm… {starter} {rest}.",
    "Let me think . . . {starter} {rest}.",
    "I was going to say... I {rest}.",
    "Wait… what? {starter} {rest}.",
    "And so on...",
    "That's it!!! {starter} {rest}.",
    "Really?! {starter} {rest}.",
    "Ready ? Go !",
]

LISTS = [
    "Here are the steps:\n1. Open the app.\n2. Tap Settings.\n3. Choose {w}.",
    "You'll need:\n- flour\n- 2 eggs\n- 1.5 cups of milk\n{starter} {rest}.",
    "Options: (a) {w}, (b) the usual, or (c) nothing. {starter} {rest}.",
    "• First, {lower} {rest}.\n• Second, {starter} {rest}.",
    "a) Call {title} {name}. b) Book the room. {starter} {rest}.",
    "i. Read it. ii. Sign it. iii. Send it back.",
    "**Step 1.** Unplug it. **Step 2.** Wait 30 sec. {starter} {rest}.",
    "1) Breakfast at {hour} {ampm}; 2) Lunch at noon. {starter} {rest}.",
]

SCRIPTS = [
    "你好。今天天气很好！你要去哪里？",
    "こんにちは。お元気ですか？今日は晴れです。",
    "नमस्ते। आप कैसे हैं? मैं ठीक हूँ।",
    "مرحبا؟ كيف حالك؟ أنا بخير۔",
    "Բարև։ Ինչպե՞ս ես։ Լավ եմ։",
    "ሰላም። እንዴት ነህ፧ ደህና ነኝ።",
    "¿Qué tal? ¡Muy bien! El Sr. García llega a las 5.",
    "Das ist z. B. gut. Herr Dr. Müller kommt um 9 Uhr.",
    "C'est « très bien ». M. Dupont arrive demain.",
    "안녕하세요. 잘 지내요? 네, 좋아요.",
    "Привет. Как дела? Хорошо, спасибо.",
    "Γεια σου; Τι κάνεις; Καλά.",
    "OK。{starter} {rest}.",
    "Price: 10．5 euros！{starter} {rest}.",
]

MISC = [
    "Email me at {first}.{last}@example.com. {starter} {rest}.",
    "See example.com/docs.html for more. {starter} {rest}.",
    "It's in the appendix (see Fig. 3). {starter} {rest}.",
    "It's in the appendix (see Fig. 3.) {starter} {rest}.",
    "The results were clear [1]. {starter} {rest}.",
    "Check section 4.2; {lower} {rest}.",
    "J. R. R. Tolkien wrote it. {starter} {rest}.",
    "George W. Bush visited. {starter} {rest}.",
    "E. coli is a bacterium. {starter} {rest}.",
    "I love Yahoo! News. {starter} {rest}.",
    "Call 555.123.4567 today. {starter} {rest}.",
    "The IP is 192.168.0.1. {starter} {rest}.",
    "Play 7.Bg5 next. {starter} {rest}.",
    "It was {year}. {starter} {rest}.",
    "We met in {year} B.C. {starter} {rest}.",
    "Turn left at the U.S. Post Office. {starter} {rest}.",
    "He's 6 ft. {inches} in. {plain} {rest}.",
    "It happened at 7 p.m. {plain} {rest}.",
    "It happened at 7 p.m. {starter} {rest}.",
    "In the evening at 7 p.m. {plain} {rest}.",
    "Yes. No. Maybe.",
    "OK! Sure? Fine.",
]

HAND = [
    ("h-flight", "Your flight UA 1234 departs from Gate B12 at 6:45 a.m. tomorrow. Boarding starts 30 min. before departure. Don't forget your ID!"),
    ("h-doctor", "Dr. Alvarez can see you on Tues., Mar. 3 at 10:15. Her office is at 221 W. Elm St., Suite 4. Should I book it?"),
    ("h-recipe", "Preheat the oven to 350°F. Mix 2 cups flour, 1 tsp. salt and 1/2 cup butter. Bake for approx. 25 min., or until golden... Enjoy!"),
    ("h-quote-dialogue", 'When I asked him, he said, "I\'ll be there by noon." Then he called back: "Actually, make it 1 p.m." So we waited.'),
    ("h-curly", "The manual says “Hold the button for 5 sec.” and then “Release it.” That resets the device. Let me know if it works."),
    ("h-single-quotes", "The error reads 'File not found.' It usually means the path is wrong. Try 'C:\\Users\\me\\file.txt' instead."),
    ("h-ellipsis-think", "Hmm... let me check. Okay… I found it. The meeting moved to Thursday . . . at least that's what the invite says."),
    ("h-list-md", "Sure, here's a quick plan:\n\n1. **Warm up.** Five minutes of walking.\n2. **Run.** Twenty minutes at an easy pace.\n3. **Cool down.** Stretch for 5 min.\n\nGood luck!"),
    ("h-bullets", "Before you go, pack:\n- your passport\n- a charger\n- snacks for the 3 hr. drive\nAnything else?"),
    ("h-science", "Water boils at 100 °C at sea level, i.e. at 1 atm. At higher altitudes, e.g. in Denver, it boils near 95 °C. That's why pasta takes longer there."),
    ("h-money", "The total comes to $1,249.99, incl. tax. You saved $50.00 vs. the list price. Would you like a receipt?"),
    ("h-version", "Update to v2.4.1 first. Then run npm install. If it fails, check Node v18.x or later. Version 3.0 drops support for it."),
    ("h-names", "The book was written by J. K. Rowling and narrated by Stephen Fry. Jim Dale narrated the U.S. edition. Both are great."),
    ("h-initial-mid", "Our CEO, Mary T. Barra, will speak at 9. Please be seated by 8:50. Thanks!"),
    ("h-company", "I work with Johnson & Johnson Inc. and Procter & Gamble Co. on this. They both signed. We start Monday."),
    ("h-phd", "She has a Ph.D. in biology from MIT. She also holds an M.D. from Harvard. Impressive, right?"),
    ("h-exclaim", "Wow! That's amazing!! Congratulations on the new job. When do you start?"),
    ("h-interrobang", "Wait, you drove 400 miles?! That's a long trip. Did you stop anywhere?"),
    ("h-chinese", "好的。我明天上午九点到。请在门口等我！谢谢。"),
    ("h-japanese", "承知しました。明日の10時に伺います。よろしくお願いします！"),
    ("h-hindi", "जी हाँ। आपका ऑर्डर कल पहुँच जाएगा। धन्यवाद!"),
    ("h-mixed", "The word for thanks in Japanese is ありがとう。 In Chinese it's 谢谢。 Easy, right?"),
    ("h-spanish", "¡Claro! La reunión es el lun. 5 de mayo. ¿Te parece bien?"),
    ("h-german", "Das Treffen ist am Mo., 5. Mai um 14 Uhr. Bitte bringen Sie z. B. Ihren Ausweis mit."),
    ("h-paren", "Take one tablet twice a day (morning and evening). Avoid alcohol (it may cause drowsiness.) Call us if you feel dizzy."),
    ("h-brackets", "Studies show a 12% drop [3]. Others found no effect [4][5]. More research is needed."),
    ("h-email", "Send the form to support@acme.io. We reply within 2 business days. Thanks for reaching out."),
    ("h-url", "You can find it at docs.example.org/setup.html. The quick-start guide is on page 2. Have fun."),
    ("h-address", "Ship it to 742 Evergreen Terrace, Springfield, IL 62704. Mark it Attn. Mr. Simpson. It should arrive by Fri."),
    ("h-time-pm", "The store opens at 9 a.m. and closes at 9 p.m. On Sundays it closes at 6 p.m. Holiday hours may vary."),
    ("h-semicolon", "I checked the logs; nothing stands out. The disk is fine; the network is fine. Let's restart it."),
    ("h-abbr-etc", "Bring pens, paper, a calculator, etc. The exam starts at 10. No phones are allowed."),
    ("h-no", "Your ticket is No. 42. Please wait to be called. It shouldn't take long."),
    ("h-long-sentence", "If you want to change the delivery address after the order has shipped, you will need to contact the carrier directly with your tracking number, which you can find in the confirmation email we sent you this morning, and they will let you know whether a change is still possible."),
    ("h-numbers-end", "The population was 8,804,190 in 2020. It grew by 7.7%. The next census is in 2030."),
    ("h-decimal-start", "Version .NET 8 is out. .5 mg is the usual dose. Ask your doctor."),
    ("h-roman", "Henry VIII had six wives. Louis XIV reigned for 72 years. Quite a record."),
    ("h-ordinal", "She finished 1st. He came 2nd. I was 3rd, sadly."),
    ("h-question-quote", 'She asked, "Is it safe?" I said yes. Was I wrong?'),
    ("h-nested-quote", "He said, \"My mom always says 'Measure twice, cut once.' She's right.\" Then he left."),
    ("h-dash", "It's simple—just restart it. If that fails – and it might – call us. We're open 24/7."),
    ("h-emoji", "Great job! 🎉 Your order is confirmed. 📦 It ships tomorrow. 😊"),
    ("h-caps", "IMPORTANT. READ THIS FIRST. The device must be charged before use."),
    ("h-vs", "It's Team A vs. Team B tonight. Kickoff is at 8. Want me to set a reminder?"),
    ("h-mt", "We hiked Mt. Rainier last summer. The view from Camp Muir was stunning. I'd go again."),
]


def fill(rng, template):
    values = {
        "name": rng.choice(NAMES), "title": rng.choice(TITLES), "place": rng.choice(PLACES),
        "month": rng.choice(MONTHS), "day": rng.randint(1, 28), "hour": rng.randint(1, 12),
        "minute": f"{rng.randint(0, 59):02d}", "ampm": rng.choice(["a.m.", "p.m.", "AM", "PM"]),
        "company": rng.choice(COMPANIES), "dollars": rng.randint(1, 999), "cents": f"{rng.randint(0, 99):02d}",
        "degree": rng.choice(DEGREES), "year": rng.randint(1900, 2030), "feet": rng.randint(4, 7),
        "inches": rng.randint(0, 11), "pounds": rng.randint(1, 300), "major": rng.randint(0, 9),
        "minor": rng.randint(0, 20), "patch": rng.randint(0, 9), "score": rng.randint(1, 10),
        "starter": rng.choice(STARTERS), "plain": rng.choice(PLAIN), "lower": rng.choice(LOWER),
        "rest": rng.choice(RESTS), "s": rng.choice(QUOTED), "q": rng.choice(QUESTIONS), "w": rng.choice(WORDS),
        "first": rng.choice(["john", "a.lee", "maria"]), "last": rng.choice(["doe", "smith"]),
    }
    return template.format(**values)


def templated(rng):
    groups = [("abbr", None), ("quote", QUOTES), ("ellipsis", ELLIPSES), ("list", LISTS), ("script", SCRIPTS), ("misc", MISC)]
    out = []
    for name, templates in groups:
        for k in range(30):
            if templates is None:
                subject = rng.choice([f"{rng.choice(TITLES)} {rng.choice(NAMES)}", rng.choice(PLAIN), "The meeting"])
                first = f"{subject} {fill(rng, rng.choice(ENDINGS))}".rstrip(".") + "."
                text = first + " " + fill(rng, rng.choice(AFTER))
            else:
                text = fill(rng, rng.choice(templates))
            if rng.random() < 0.5:
                text += " " + fill(rng, rng.choice(AFTER))
            out.append((f"t-{name}-{k}", text))
    return out


def main():
    rng = random.Random(48)
    with open(os.path.join(HERE, "..", "more-replies.jsonl"), "w") as f:
        for rid, text in templated(rng):
            f.write(json.dumps({"id": rid, "set": "tune", "text": text, "tokens": []}, ensure_ascii=False) + "\n")
        for rid, text in HAND:
            f.write(json.dumps({"id": rid, "set": "holdout", "text": text, "tokens": []}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
