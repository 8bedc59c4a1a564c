#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/model/run.sh SPIN CC MODEL WORKDIR VARIANT pass|fail [spin -D flags...]
# Runs the Spin model MODEL with -DVARIANT: spin -a, cc pan.c, ./pan, and
# reads pan's "errors: N". "pass" wants N = 0; "fail" wants N > 0 (a broken
# protocol that the model must catch). Exits non-zero otherwise.
set -eu
spin=$1 cc=$2 model=$3 work=$4 variant=$5 expect=$6
shift 6
dir=$work/$variant
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
cp "$model" model.pml
model=model.pml
"$spin" -D"$variant" "$@" -a "$model" >spin.log 2>&1 || { cat spin.log; echo "FAIL: spin -a"; exit 1; }
"$cc" -O2 -w -DSAFETY -o pan pan.c >cc.log 2>&1 || { cat cc.log; echo "FAIL: cc pan.c"; exit 1; }
./pan -m1000000 >pan.log 2>&1 || true
if grep -q "max search depth too small" pan.log; then
	cat pan.log; echo "FAIL: search depth too small, the search was incomplete"; exit 1
fi
n=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.log | head -n 1)
if [ -z "$n" ]; then
	cat pan.log; echo "FAIL: no 'errors: N' in pan's output"; exit 1
fi
grep -E "assertion violated|errors:|states, stored" pan.log || true
if [ "$expect" = pass ] && [ "$n" -eq 0 ]; then
	echo "PASS: $variant: the property holds in every interleaving"; exit 0
fi
if [ "$expect" = fail ] && [ "$n" -gt 0 ]; then
	echo "PASS: $variant: the broken protocol is caught ($n error(s))"; exit 0
fi
if [ "$n" -gt 0 ]; then
	echo "counterexample (spin -t -p):"
	"$spin" -D"$variant" "$@" -t -p "$model" 2>&1 | tail -n 60 || true
fi
echo "FAIL: $variant: errors: $n, expected $expect"
exit 1
