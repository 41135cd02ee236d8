// Type-aware checks that the compiler does not make: a promise nobody awaits or handles (a lost error, a
// write that is not waited for), and a switch over a union that forgets a member.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'test/support/fixtures/**'] },
  {
    files: ['src/**/*.ts', 'bench/**/*.ts', 'test/**/*.ts'],
    ignores: ['src/console/app/**', 'test/unit/console/**'],
    extends: [tseslint.configs.base],
    languageOptions: { parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
    },
  },
  {
    // The console's pages run in the browser: their own project (DOM types, Preact's JSX).
    files: ['src/console/app/**/*.ts', 'src/console/app/**/*.tsx', 'test/unit/console/**/*.ts'],
    extends: [tseslint.configs.base],
    languageOptions: { parserOptions: { project: './tsconfig.console.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
    },
  },
);
