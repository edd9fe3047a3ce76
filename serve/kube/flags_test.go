package kube

import "testing"

func TestFlagsCheck(t *testing.T) {
	ok := Flags{Kubeconfig: "kc", Resync: DefaultResync, QPS: 5, Burst: 10}
	for _, c := range []struct {
		f          Flags
		set        bool
		cluster    string
		want, left string
	}{
		{Flags{}, true, "synthetic", "", "synthetic"},
		{ok, false, "synthetic", "", "none"},
		{ok, true, "none", "", "none"},
		{ok, true, "synthetic", "--cluster synthetic with --kubeconfig: the cluster's nodes define the machines", "synthetic"},
		{Flags{Kubeconfig: "kc", QPS: 5, Burst: 10}, false, "synthetic", "--kube-resync 0s: want > 0", "synthetic"},
		{Flags{Kubeconfig: "kc", Resync: 1, Burst: 0, QPS: 5}, false, "synthetic", "--kube-qps 5 --kube-burst 0: want > 0 and >= 1", "synthetic"},
	} {
		cluster := c.cluster
		err := c.f.Check(c.set, &cluster)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want || cluster != c.left {
			t.Errorf("%+v set=%v: %q, cluster %q; want %q, %q", c.f, c.set, got, cluster, c.want, c.left)
		}
	}
	if (Flags{}).Attach(nil) != nil || ok.Attach(nil) == nil {
		t.Error("Attach: want nil exactly without a kubeconfig")
	}
}
