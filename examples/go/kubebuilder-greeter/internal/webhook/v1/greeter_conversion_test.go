package v1

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	demov1 "example.com/greeter/api/v1"
	demov2 "example.com/greeter/api/v2"
)

// The conversion webhook, served by the manager's webhook server and called by the API server: a Greeter is stored
// at v1, the hub, and read or written at v2, the spoke, through the webhook's hub-and-spoke conversion.
var _ = Describe("Greeter conversion webhook", func() {
	It("stores a Greeter written at v2 at v1, where recipient is name", func() {
		spoke := &demov2.Greeter{ObjectMeta: metav1.ObjectMeta{Name: "spoke-written", Namespace: "default"}, Spec: demov2.GreeterSpec{Recipient: "Ada", Salutation: "Hi"}}
		Expect(k8sClient.Create(ctx, spoke)).To(Succeed())
		Expect(spoke.Spec.Recipient).To(Equal("Ada"), "the create's answer is converted back to v2")

		hub := &demov1.Greeter{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: "spoke-written"}, hub)).To(Succeed())
		Expect(hub.Spec.Name).To(Equal("Ada"))
		Expect(hub.Spec.Salutation).To(Equal("Hi"))
		Expect(hub.UID).To(Equal(spoke.UID))
		Expect(hub.ResourceVersion).To(Equal(spoke.ResourceVersion))
	})

	It("reads a Greeter written at v1 at v2, and an update at v2 reaches v1", func() {
		hub := &demov1.Greeter{ObjectMeta: metav1.ObjectMeta{Name: "hub-written", Namespace: "default"}, Spec: demov1.GreeterSpec{Name: "Grace"}}
		Expect(k8sClient.Create(ctx, hub)).To(Succeed())

		spoke := &demov2.Greeter{}
		key := types.NamespacedName{Namespace: "default", Name: "hub-written"}
		Expect(k8sClient.Get(ctx, key, spoke)).To(Succeed())
		Expect(spoke.Spec.Recipient).To(Equal("Grace"))
		Expect(spoke.Spec.Salutation).To(Equal("Hello"), "the CRD's default, set when stored at v1")

		spoke.Spec.Salutation = "Howdy"
		Expect(k8sClient.Update(ctx, spoke)).To(Succeed())
		Expect(k8sClient.Get(ctx, key, hub)).To(Succeed())
		Expect(hub.Spec.Salutation).To(Equal("Howdy"))
		Expect(hub.Generation).To(Equal(int64(2)))
	})

	It("lists Greeters at v2 and patches one there", func() {
		list := &demov2.GreeterList{}
		Expect(k8sClient.List(ctx, list, client.InNamespace("default"))).To(Succeed())
		recipients := map[string]string{}
		for _, g := range list.Items {
			recipients[g.Name] = g.Spec.Recipient
		}
		Expect(recipients).To(HaveKeyWithValue("hub-written", "Grace"))
		Expect(recipients).To(HaveKeyWithValue("spoke-written", "Ada"))

		spoke := &demov2.Greeter{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: "spoke-written"}, spoke)).To(Succeed())
		patch := client.MergeFrom(spoke.DeepCopy())
		spoke.Spec.Salutation = "Ahoy"
		Expect(k8sClient.Patch(ctx, spoke, patch)).To(Succeed())
		hub := &demov1.Greeter{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: "spoke-written"}, hub)).To(Succeed())
		Expect(hub.Spec.Salutation).To(Equal("Ahoy"))
	})

	It("keeps the validating webhook, written for v1, judging writes made at v2", func() {
		spoke := &demov2.Greeter{ObjectMeta: metav1.ObjectMeta{Name: "two-lines-v2", Namespace: "default"}, Spec: demov2.GreeterSpec{Recipient: "x", Salutation: "Hello\nthere"}}
		err := k8sClient.Create(ctx, spoke)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`admission webhook "vgreeter-v1.kb.io" denied the request`))
		Expect(err.Error()).To(ContainSubstring("must be one line"))
	})
})
