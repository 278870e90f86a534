// Type-aware linting: floating promises and misused async callbacks are the bugs a server
// cannot afford, and only the typed rules see them.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.portico/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // An ESM import of node:http (polka's ESM build has one) loads Node's bundled undici into
    // the process: 40-50 ms of a start and 2 MiB of heap (shared/node-http.ts).
    files: ['gateway/**/*.ts', 'resource-service/**/*.ts', 'shared/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'node:http',
              allowTypeImports: true,
              message: 'take its values from shared/node-http.ts',
            },
            { name: 'http', allowTypeImports: true, message: 'take its values from shared/node-http.ts' },
            {
              name: 'polka',
              allowTypeImports: true,
              message: 'require its CommonJS build (resource-service/app.ts)',
            },
          ],
        },
      ],
    },
  },
  {
    // Tests read JSON bodies they assert on; typing every response shape would add noise,
    // not safety.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
