/** Dataset naming rules, shared by the store and the config that names datasets. */

const DATASET_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

/** Why `name` cannot name a dataset, or undefined when it can. */
export function datasetNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length < 1 || name.length > 128 || !DATASET_NAME.test(name)) {
    return `invalid dataset name "${String(name)}": 1 to 128 characters of letters, digits, ".", "_" and "-", starting and ending with a letter or digit`;
  }
  if (name.startsWith('axiom-')) return `invalid dataset name "${name}": the prefix "axiom-" is reserved`;
  return undefined;
}
