import sys, re, collections
# usage: incl.py script.txt [thread-substring] [focus-substring]
path = sys.argv[1]; thread = sys.argv[2] if len(sys.argv) > 2 else 'shard'; focus = sys.argv[3] if len(sys.argv) > 3 else None
samples = []; cur = None
for line in open(path, errors='replace'):
    if not line.strip():
        if cur is not None: samples.append(cur)
        cur = None; continue
    if not line.startswith((' ', '\t')):
        cur = {'comm': line.split()[0], 'stack': []}; continue
    if cur is not None:
        parts = line.strip().split(None, 1)
        sym = parts[1] if len(parts) > 1 else parts[0]
        sym = re.sub(r' \([^)]*\)$', '', sym)
        sym = re.sub(r'\+0x[0-9a-f]+$', '', sym)
        cur['stack'].append(sym)
if cur: samples.append(cur)
samples = [s for s in samples if thread in s['comm']]
total = len(samples)
print('samples', total)
counts = collections.Counter()
for s in samples:
    st = s['stack']
    if focus:
        idx = [i for i, f in enumerate(st) if focus in f]
        if not idx: continue
        # direct callee of the outermost focus frame
        i = max(idx)
        callee = st[i-1] if i > 0 else '<self>'
        counts['__focus__'] += 1
        counts[callee] += 1
    else:
        for f in set(st): counts[f] += 1
for k, v in counts.most_common(45):
    print(f'{100*v/total:6.2f}%  {k[:150]}')
