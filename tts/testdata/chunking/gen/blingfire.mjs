// Sentence splitting by BlingFire (npm package blingfire 0.1.1, whose
// prebuilt addon carries BlingFire's default sentence model): reads one
// JSON string per line on stdin, writes the sentences as a JSON array.
import * as path from "node:path";
import * as readline from "node:readline";
const bf = await import(path.join(process.env.BLINGFIRE_PROJECT, "node_modules/blingfire/lib/index.js"));
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const text = JSON.parse(line);
  const out = text.trim() === "" ? [] : bf.textToSentences(text).split("\n");
  process.stdout.write(JSON.stringify(out) + "\n");
});
