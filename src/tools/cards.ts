// The cards of the built-in tools: what the planner and executor read before choosing and calling one.
// They are written for small models: short sentences, one job per tool, concrete examples whose arguments
// are exactly what the executor should emit, and limitations that steer the model away from misuse.

import type { ToolCard } from './tool';

export const PYTHON_CARD: ToolCard = {
  name: 'python',
  description:
    'Runs Python 3 code and returns what it prints. Use it for arithmetic, counting, dates, unit conversion, ' +
    'string manipulation and any exact calculation. Always print() the answer.',
  input: {
    type: 'object',
    properties: {
      code: { type: 'string', description: 'Complete Python 3 code. Print the result with print(...).' },
    },
    required: ['code'],
  },
  output:
    'The printed output (stdout), then the value of the last line if it is an expression. On an error, the ' +
    'Python traceback.',
  limitations: [
    'Only the Python standard library: no numpy, pandas, requests or pip install.',
    'No internet, no files from the user, no input().',
    'Each call starts fresh: variables from earlier calls are gone.',
    'Stopped after the time limit (a few seconds): no endless loops.',
  ],
  examples: [
    { goal: 'What is 17% of 2,340?', args: { code: 'print(0.17 * 2340)' } },
    { goal: 'How many days are between 2024-01-15 and 2024-03-01?', args: { code: 'from datetime import date\nprint((date(2024, 3, 1) - date(2024, 1, 15)).days)' } },
    { goal: 'Count the letter r in "strawberry".', args: { code: 'print("strawberry".count("r"))' } },
  ],
  usesNetwork: false,
};

export const WIKIPEDIA_CARD: ToolCard = {
  name: 'wikipedia',
  description:
    'Searches Wikipedia and returns the opening paragraphs of the best matching articles. Use it for facts ' +
    'about people, places, events, organisations and things.',
  input: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'A short search phrase, like a Wikipedia article title (2-6 words). Not a full question.', maxLength: 200 },
      max_results: { type: 'integer', description: 'How many articles to return, 1 to 5. Default 3.', minimum: 1, maximum: 5 },
    },
    required: ['query'],
  },
  output: 'For each article: its title, its URL and the start of its text. Or "No Wikipedia articles found".',
  limitations: [
    'Sends the query to Wikipedia over the internet; only on when the user allows it.',
    'Returns only the first paragraphs of each article, shortened.',
    'Search works best with names and keywords, not questions.',
    'Wikipedia can be out of date; it does not know today\'s news.',
  ],
  examples: [
    { goal: 'When was the Eiffel Tower built?', args: { query: 'Eiffel Tower' } },
    { goal: 'Who founded the company that makes the PlayStation?', args: { query: 'Sony founders', max_results: 2 } },
  ],
  usesNetwork: true,
};

export const BASE_GENERATOR_CARD: ToolCard = {
  name: 'base_generator',
  description:
    'Asks a general language model to answer a question or do a writing task from its own knowledge. Use it ' +
    'for explanations, summaries, rewording and common knowledge when no other tool fits.',
  input: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'The question or task, complete and self-contained, with any needed context.' },
    },
    required: ['query'],
  },
  output: 'The model\'s answer as text.',
  limitations: [
    'It can be wrong and can make up facts: check facts with wikipedia and calculations with python.',
    'It cannot see earlier steps: put everything it needs into the query.',
    'Its knowledge is not current.',
  ],
  examples: [
    { goal: 'Explain photosynthesis in one sentence.', args: { query: 'Explain photosynthesis in one sentence.' } },
    { goal: 'Summarise the found text.', args: { query: 'Summarise in two sentences: The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889 ...' } },
  ],
  usesNetwork: false,
};

export const WEB_SEARCH_CARD: ToolCard = {
  name: 'web_search',
  description:
    'Searches the web and returns the top results (title, URL and a short snippet). Use it for recent events ' +
    'and facts that are not on Wikipedia.',
  input: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'A short search phrase (2-8 words).', maxLength: 200 },
      max_results: { type: 'integer', description: 'How many results to return, 1 to 10. Default 5.', minimum: 1, maximum: 10 },
    },
    required: ['query'],
  },
  output: 'A numbered list of results: title, URL, snippet. Or "No web results found".',
  limitations: [
    'Sends the query to the search service the user configured; only on when the user allows it.',
    'Snippets are short and may be cut off; they are not whole pages.',
    'Results can be wrong, old or advertising.',
  ],
  examples: [
    { goal: 'Who won the most recent Tour de France?', args: { query: 'Tour de France winner' } },
    { goal: 'Find the release date of Python 3.13.', args: { query: 'Python 3.13 release date', max_results: 3 } },
  ],
  usesNetwork: true,
};

export const BUILTIN_CARDS: ToolCard[] = [PYTHON_CARD, WIKIPEDIA_CARD, BASE_GENERATOR_CARD, WEB_SEARCH_CARD];

