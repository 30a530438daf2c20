package testkit

// Answers are assistant answers with commas, sentence ends and lists: the
// texts heard's evaluations speak (cmd/underrun's recordings of speak, and
// the tune part of pipeline/heard's corpus).
var Answers = []string{
	"Sure, I can help with that. The room is on the second floor, next to the lift.",
	"You will need three things: a passport, a visa, and a return ticket. Bring copies of each.",
	"The store opens at nine. It closes at six on weekdays, and at four on Saturdays.",
	"First, preheat the oven. Then mix the flour, the sugar and the butter. Bake it for twenty minutes.",
	"Your order has shipped. It should arrive on Tuesday, or Wednesday at the latest. Is there anything else?",
	"I found two flights. One leaves at noon, the other at five. Which one would you like?",
	"To reset your password, open the settings, choose security, and press reset. You will get an email.",
	"The weather tomorrow is sunny, with a high of twenty degrees. Rain is expected on Friday.",
}
