/**
 * Prices of hosted language models, in US dollars per million tokens (input, output), for genai_cost and
 * its kin: the providers' published list prices for standard requests. A model's name matches its entry
 * exactly, or as the entry followed by a dated or versioned suffix ("claude-3-opus-20240229",
 * "gpt-4o-2024-08-06"); a provider prefix ("openai/gpt-4o") is dropped; the longest entry wins.
 */
import { lookupTable } from '../../util/lookup.js';
export const MODEL_PRICES: Record<string, { input: number; output: number }> = lookupTable({
  // OpenAI
  'gpt-3.5-turbo': { input: 0.5, output: 1.5 },
  'gpt-4': { input: 30, output: 60 },
  'gpt-4-32k': { input: 60, output: 120 },
  'gpt-4-turbo': { input: 10, output: 30 },
  'gpt-4o': { input: 2.5, output: 10 },
  'gpt-4o-mini': { input: 0.15, output: 0.6 },
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'gpt-4.1-nano': { input: 0.1, output: 0.4 },
  'gpt-5': { input: 1.25, output: 10 },
  'gpt-5-mini': { input: 0.25, output: 2 },
  'gpt-5-nano': { input: 0.05, output: 0.4 },
  o1: { input: 15, output: 60 },
  'o1-mini': { input: 1.1, output: 4.4 },
  o3: { input: 2, output: 8 },
  'o3-mini': { input: 1.1, output: 4.4 },
  'o4-mini': { input: 1.1, output: 4.4 },
  // Anthropic
  'claude-3-haiku': { input: 0.25, output: 1.25 },
  'claude-3-sonnet': { input: 3, output: 15 },
  'claude-3-opus': { input: 15, output: 75 },
  'claude-3-5-haiku': { input: 0.8, output: 4 },
  'claude-3-5-sonnet': { input: 3, output: 15 },
  'claude-3-7-sonnet': { input: 3, output: 15 },
  'claude-sonnet-4': { input: 3, output: 15 },
  'claude-opus-4': { input: 15, output: 75 },
  'claude-opus-4-1': { input: 15, output: 75 },
  // Google
  'gemini-1.5-flash': { input: 0.075, output: 0.3 },
  'gemini-1.5-pro': { input: 1.25, output: 5 },
  'gemini-2.0-flash': { input: 0.1, output: 0.4 },
  'gemini-2.5-flash': { input: 0.3, output: 2.5 },
  'gemini-2.5-pro': { input: 1.25, output: 10 },
  // Mistral
  'mistral-small': { input: 0.2, output: 0.6 },
  'mistral-large': { input: 2, output: 6 },
});

const BY_LENGTH = Object.keys(MODEL_PRICES).sort((a, b) => b.length - a.length);

/** The prices of a model by its name, or undefined for a model not in the table. */
export function pricingOf(model: string): { input: number; output: number } | undefined {
  const name = model.trim().toLowerCase().replace(/^.*\//, '');
  const exact = MODEL_PRICES[name];
  if (exact) return exact;
  const entry = BY_LENGTH.find((k) => name.startsWith(`${k}-`) || name.startsWith(`${k}@`));
  return entry ? MODEL_PRICES[entry] : undefined;
}
