import re,sys,statistics as st
rows={}
for line in open(sys.argv[1]):
    m=re.match(r"round (\d+) (\S+) ([\d,]+) msgs/s\s+p50 ([\d.]+) p90 ([\d.]+) p99 ([\d.]+) p99.9 ([\d.]+) max ([\d.]+)",line)
    if not m: continue
    r,v=int(m[1]),m[2]
    rows.setdefault(v,{})[r]=dict(rate=int(m[3].replace(',','')),p50=float(m[4]),p90=float(m[5]),p99=float(m[6]),p999=float(m[7]),max=float(m[8]))
a,b=list(rows)
for k in ["rate","p50","p90","p99","p999","max"]:
    xs=[rows[a][r][k] for r in sorted(rows[a])]; ys=[rows[b][r][k] for r in sorted(rows[b])]
    wins=sum(1 for x,y in zip(xs,ys) if x<y)
    print(f"{k:5} {a}: med {st.median(xs):9.1f} [{min(xs):.0f}-{max(xs):.0f}]  {b}: med {st.median(ys):9.1f} [{min(ys):.0f}-{max(ys):.0f}]  {a}<{b} in {wins}/{len(xs)}")
