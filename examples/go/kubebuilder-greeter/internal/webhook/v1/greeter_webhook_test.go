package v1

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	demov1 "example.com/greeter/api/v1"
)

var _ = Describe("Greeter Webhook", func() {
	It("lets a Greeter be made and its salutation change, through the API server's call of the webhook", func() {
		greeter := &demov1.Greeter{ObjectMeta: metav1.ObjectMeta{Name: "webhooked", Namespace: "default"}, Spec: demov1.GreeterSpec{Name: "envtest"}}
		Expect(k8sClient.Create(ctx, greeter)).To(Succeed())
		greeter.Spec.Salutation = "Hi"
		Expect(k8sClient.Update(ctx, greeter)).To(Succeed())
	})

	It("is called by the API server and its denial reaches the client", func() {
		greeter := &demov1.Greeter{ObjectMeta: metav1.ObjectMeta{Name: "renamed", Namespace: "default"}, Spec: demov1.GreeterSpec{Name: "first"}}
		Expect(k8sClient.Create(ctx, greeter)).To(Succeed())
		greeter.Spec.Name = "second"
		err := k8sClient.Update(ctx, greeter)
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring(`admission webhook "vgreeter-v1.kb.io" denied the request`))
		Expect(err.Error()).To(ContainSubstring("spec.name: Forbidden: is immutable"))

		twoLines := &demov1.Greeter{ObjectMeta: metav1.ObjectMeta{Name: "two-lines", Namespace: "default"}, Spec: demov1.GreeterSpec{Name: "x", Salutation: "Hello\nthere"}}
		err = k8sClient.Create(ctx, twoLines)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("must be one line"))
	})
})
