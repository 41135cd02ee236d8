/** Dataset naming rules, shared by the store and the config that names datasets. */

const DATASET_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

/** The prefix of the datasets the service keeps for itself (the audit trail). */
export const RESERVED_PREFIX = 'axiom-';

/** Whether a name takes the reserved prefix, in any case (Axiom-audit is the audit trail's name too). */
export function hasReservedPrefix(name: string): boolean {
  return name.toLowerCase().startsWith(RESERVED_PREFIX);
}

/** Why `name` cannot name a dataset, or undefined when it can; `system` names may take the reserved prefix. */
export function datasetNameProblem(name: unknown, system = false): string | undefined {
  if (typeof name !== 'string' || name.length < 1 || name.length > 128 || !DATASET_NAME.test(name)) {
    return `invalid dataset name "${String(name)}": 1 to 128 characters of letters, digits, ".", "_" and "-", starting and ending with a letter or digit`;
  }
  if (!system && hasReservedPrefix(name))
    return `invalid dataset name "${name}": the prefix "${RESERVED_PREFIX}" is reserved, in any case`;
  return undefined;
}
