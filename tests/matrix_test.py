#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Description: unit test of scripts/matrix without booting anything: the checked-in
# expectations file parses (every cell declared and used, every program exists, every
# known-wrong line names its item), and the judge gives ok / known-wrong / fixed / MISMATCH
# for made-up results, including the reason, cause, nocause and param checks.
#   tests/matrix_test.py SOURCE_DIR
import os
import sys
import tempfile

sys.dont_write_bytecode = True   # no __pycache__ next to scripts/matrix
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import load_script  # noqa: E402

src = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
matrix = load_script(os.path.join(src, 'scripts', 'matrix'))
fails = 0


def check(cond, what):
    global fails
    print('%s: %s' % ('ok' if cond else 'FAIL', what))
    fails += not cond


# the checked-in file
cells, args, expects = matrix.load(os.path.join(src, 'tests', 'matrix-expect.txt'))
programs = {d for d in os.listdir(src) if os.path.isfile(os.path.join(src, d, d + '.c'))}
check(expects, '%d expectations, %d cells' % (len(expects), len(cells)))
check(all(e.program in programs for e in expects),
      'every program exists: %s' % sorted({e.program for e in expects} - programs))
used = {e.cell for e in expects}
check(used == set(cells), 'every cell is used: unused %s' % sorted(set(cells) - used))
check(len({(e.program, e.cell) for e in expects}) == len(expects), 'no program x cell twice')
check(all(e.wrong for e in expects if e.now), 'every now= names what it waits for')
check(programs <= {e.program for e in expects}, 'every program takes part: missing %s'
      % sorted(programs - {e.program for e in expects}))
ci = [e for e in expects if e.ci]
check(0 < len(ci) <= 5, '%d ci runs (the reduced set stays small)' % len(ci))


def res(verdict, code, reason=None, causes=(), params=None):
    return {'verdict': verdict, 'exit_code': code, 'reason': reason, 'causes': list(causes),
            'parameters': params or {}}


def expect(line):
    with tempfile.NamedTemporaryFile('w', suffix='.txt', delete=False) as f:
        f.write('cell k/s amd64\n' + line + '\n')
    try:
        return matrix.load(f.name)[2][0]
    finally:
        os.unlink(f.name)


e = expect('p k/s PASS')
check(matrix.judge(e, res('PASS', 0))[0] == 'ok', 'PASS expected, PASS: ok')
check(matrix.judge(e, res('FAIL', 1))[0] == 'MISMATCH', 'PASS expected, FAIL: MISMATCH')
check(matrix.judge(e, res(None, 125))[0] == 'MISMATCH', 'no report (no boot): MISMATCH')
e = expect('p k/s SKIP129 reason=cpuidle')
check(matrix.judge(e, res('SKIP', 129, 'no cpuidle states'))[0] == 'ok', 'SKIP 129 with its reason: ok')
check(matrix.judge(e, res('SKIP', 125, 'no cpuidle states'))[0] == 'MISMATCH', 'SKIP 125 is not SKIP 129')
check(matrix.judge(e, res('SKIP', 129, 'not root'))[0] == 'MISMATCH', 'SKIP 129, another reason: MISMATCH')
e = expect('p k/s FAIL|SKIP125 cause=RT reason=RT nocause=4cd1 now=FAIL wrong=item')
check(matrix.judge(e, res('FAIL', 1, causes=['4cd1 (v4.9)']))[0] == 'known-wrong', 'the wrong cause now: known-wrong')
check(matrix.judge(e, res('FAIL', 1, causes=['PREEMPT_RT', '4cd1']))[0] == 'known-wrong', 'right and wrong cause: known-wrong')
check(matrix.judge(e, res('FAIL', 1, causes=['PREEMPT_RT']))[0] == 'fixed', 'the right cause: fixed')
check(matrix.judge(e, res('SKIP', 125, 'PREEMPT_RT kernel'))[0] == 'fixed', 'SKIP 125 naming it: fixed')
check(matrix.judge(e, res('PASS', 0))[0] == 'MISMATCH', 'neither: MISMATCH')
e = expect('p k/s PASS param=cpu=^[01]$')
check(matrix.judge(e, res('PASS', 0, params={'cpu': '1'}))[0] == 'ok', 'param in range: ok')
check(matrix.judge(e, res('PASS', 0, params={'cpu': '3'}))[0] == 'MISMATCH', 'param outside: MISMATCH')
# text=/notext=: lines of the report's text, on any verdict (rt_starve's NET_RX figures)
e = expect('p k/s PASS "notext=NET_RX: 0 skbs" now=PASS wrong=softnet-rows')
zero = dict(res('PASS', 0), text=['rep 1', '       NET_RX: 0 skbs, 0 dropped, 0 squeezed'])
some = dict(res('PASS', 0), text=['rep 1', '       NET_RX: 128 skbs, 0 dropped, 2 squeezed'])
check(matrix.judge(e, zero)[0] == 'known-wrong', 'notext matched, now= verdict: known-wrong')
check(matrix.judge(e, some)[0] == 'fixed', 'notext not matched: fixed')
check(matrix.judge(e, dict(zero, verdict='FAIL', exit_code=1))[0] == 'MISMATCH',
      'another verdict: MISMATCH')
e = expect('p k/s SKIP125 "text=NET_RX: [1-9]"')
check(matrix.judge(e, dict(some, verdict='SKIP', exit_code=125))[0] == 'ok', 'text matched on a SKIP: ok')
check(matrix.judge(e, dict(zero, verdict='SKIP', exit_code=125))[0] == 'MISMATCH', 'text not matched: MISMATCH')
check(matrix.judge(e, res('SKIP', 125))[0] == 'MISMATCH', 'no text at all: MISMATCH')
# kernels built from source: built:NAME is $KREPRO_CACHE/kernels/NAME/bzImage; missing, its
# cells are left out (not_built names it), present, it is the image
with tempfile.TemporaryDirectory() as cache:
    matrix.CACHE = cache
    check(matrix.not_built('built:base') == 'base', 'built:base not built: left out')
    check(matrix.not_built('amd64') is None and matrix.not_built('/x/bzImage') is None,
          'a Debian flavour or a path is never left out')
    os.makedirs(os.path.join(cache, 'kernels', 'base'))
    open(os.path.join(cache, 'kernels', 'base', 'bzImage'), 'w').close()
    check(matrix.not_built('built:base') is None, 'built:base built: runs')
    check(matrix.kernel_image('built:base', {}) == os.path.join(cache, 'kernels', 'base', 'bzImage'),
          'built:base is its bzImage')
check(any(c.kernel.startswith('built:') for c in cells.values()),
      'cells on the kernels built from source are declared')
for bad in ('p k/s MAYBE', 'p nocell PASS', 'p k/s PASS now=FAIL', 'p k/s PASS frobnicate=1'):
    try:
        expect(bad)
        check(False, 'refused: %s' % bad)
    except matrix.Usage:
        check(True, 'refused: %s' % bad)
print('PASS' if not fails else '%d check(s) failed' % fails)
sys.exit(1 if fails else 0)
