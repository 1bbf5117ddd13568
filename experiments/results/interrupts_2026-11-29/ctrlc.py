import os, signal, subprocess, sys, time
cmd, wait = sys.argv[2:], float(sys.argv[1])
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
time.sleep(wait)
t = time.time()
os.killpg(p.pid, signal.SIGINT)
out, err = p.communicate()
print("rc", p.returncode, "exit after %.1f s" % (time.time() - t))
print("stdout tail:", out[-400:])
print("stderr tail:", err[-1500:])
