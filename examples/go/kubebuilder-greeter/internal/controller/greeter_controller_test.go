package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	demov1 "example.com/greeter/api/v1"
)

var _ = Describe("Greeter Controller", func() {
	const timeout = 20 * time.Second
	const interval = 100 * time.Millisecond

	Context("When reconciling a resource", func() {
		const resourceName = "test-resource"
		key := types.NamespacedName{Name: resourceName, Namespace: "default"}

		BeforeEach(func() {
			By("creating the custom resource for the Kind Greeter")
			greeter := &demov1.Greeter{}
			err := k8sClient.Get(ctx, key, greeter)
			if err != nil && apierrors.IsNotFound(err) {
				resource := &demov1.Greeter{
					ObjectMeta: metav1.ObjectMeta{Name: resourceName, Namespace: "default"},
					Spec:       demov1.GreeterSpec{Name: "envtest"},
				}
				Expect(k8sClient.Create(ctx, resource)).To(Succeed())
			}
		})

		AfterEach(func() {
			resource := &demov1.Greeter{}
			Expect(k8sClient.Get(ctx, key, resource)).To(Succeed())
			By("cleaning up the specific resource instance Greeter")
			Expect(k8sClient.Delete(ctx, resource)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, key, &demov1.Greeter{}))
			}, timeout, interval).Should(BeTrue())
		})

		It("should successfully reconcile the resource", func() {
			By("reconciling the created resource")
			controllerReconciler := &GreeterReconciler{Client: k8sClient, Scheme: k8sClient.Scheme()}
			_, err := controllerReconciler.Reconcile(ctx, reconcile.Request{NamespacedName: key})
			Expect(err).NotTo(HaveOccurred())

			configMap := &corev1.ConfigMap{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Name: resourceName + "-greeting", Namespace: "default"}, configMap)).To(Succeed())
			Expect(configMap.Data).To(HaveKeyWithValue("greeting", "Hello, envtest!"))
			Expect(configMap.OwnerReferences).To(HaveLen(1))
			Expect(configMap.OwnerReferences[0].Kind).To(Equal("Greeter"))
		})

		It("applies the CRD's default and converges a changed spec through the manager's watches", func() {
			greeter := &demov1.Greeter{}
			Expect(k8sClient.Get(ctx, key, greeter)).To(Succeed())
			Expect(greeter.Spec.Salutation).To(Equal("Hello"), "the CRD's structural schema defaults spec.salutation")

			// The controller writes the Greeter's status meanwhile, so an update may meet a newer resourceVersion.
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := k8sClient.Get(ctx, key, greeter); err != nil {
					return err
				}
				greeter.Spec.Salutation = "Bonjour"
				return k8sClient.Update(ctx, greeter)
			})).To(Succeed())
			Eventually(func(g Gomega) {
				latest := &demov1.Greeter{}
				g.Expect(k8sClient.Get(ctx, key, latest)).To(Succeed())
				g.Expect(latest.Status.ObservedGeneration).To(Equal(latest.Generation))
				g.Expect(latest.Status.Greeting).To(Equal("Bonjour, envtest!"))
				g.Expect(meta.IsStatusConditionTrue(latest.Status.Conditions, "Ready")).To(BeTrue())
				configMap := &corev1.ConfigMap{}
				g.Expect(k8sClient.Get(ctx, types.NamespacedName{Name: resourceName + "-greeting", Namespace: "default"}, configMap)).To(Succeed())
				g.Expect(configMap.Data).To(HaveKeyWithValue("greeting", "Bonjour, envtest!"))
			}, timeout, interval).Should(Succeed())
		})

		It("puts back a ConfigMap someone else changed", func() {
			name := types.NamespacedName{Name: resourceName + "-greeting", Namespace: "default"}
			configMap := &corev1.ConfigMap{}
			Eventually(func() error { return k8sClient.Get(ctx, name, configMap) }, timeout, interval).Should(Succeed())
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := k8sClient.Get(ctx, name, configMap); err != nil {
					return err
				}
				configMap.Data = map[string]string{"greeting": "tampered"}
				return k8sClient.Update(ctx, configMap)
			})).To(Succeed())
			Eventually(func(g Gomega) {
				latest := &corev1.ConfigMap{}
				g.Expect(k8sClient.Get(ctx, name, latest)).To(Succeed())
				g.Expect(latest.Data).To(HaveKeyWithValue("greeting", "Hello, envtest!"))
			}, timeout, interval).Should(Succeed())
		})
	})

	Context("Against the CRD's schema", func() {
		It("refuses a Greeter without a name", func() {
			bad := &demov1.Greeter{ObjectMeta: metav1.ObjectMeta{Name: "nameless", Namespace: "default"}}
			err := k8sClient.Create(ctx, bad)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected 422 Invalid, got %v", err)
		})

		It("refuses what the CRD's CEL rule refuses, with its message", func() {
			bad := &demov1.Greeter{ObjectMeta: metav1.ObjectMeta{Name: "to-nobody", Namespace: "default"}, Spec: demov1.GreeterSpec{Name: "nobody"}}
			err := k8sClient.Create(ctx, bad)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected 422 Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring("a Greeter greets somebody"))
		})
	})

	Context("As a user envtest made with AddUser", func() {
		It("may do only what RBAC grants it", func() {
			user, err := testEnv.AddUser(envtest.User{Name: "reader", Groups: []string{"readers"}}, nil)
			Expect(err).NotTo(HaveOccurred())
			readerClient, err := client.New(user.Config(), client.Options{Scheme: k8sClient.Scheme()})
			Expect(err).NotTo(HaveOccurred())

			list := &demov1.GreeterList{}
			err = readerClient.List(ctx, list, client.InNamespace("default"))
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected 403 Forbidden before any grant, got %v", err)

			role := &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: "greeter-reader", Namespace: "default"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"demo.settle.dev"}, Resources: []string{"greeters"}, Verbs: []string{"get", "list"}}},
			}
			Expect(k8sClient.Create(ctx, role)).To(Succeed())
			binding := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "greeter-reader", Namespace: "default"},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "greeter-reader"},
				Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "readers"}},
			}
			Expect(k8sClient.Create(ctx, binding)).To(Succeed())
			Eventually(func() error {
				return readerClient.List(ctx, list, client.InNamespace("default"))
			}, timeout, interval).Should(Succeed())

			err = readerClient.Create(ctx, &demov1.Greeter{ObjectMeta: metav1.ObjectMeta{Name: "not-mine", Namespace: "default"}, Spec: demov1.GreeterSpec{Name: "x"}})
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected 403 Forbidden for a verb the Role leaves out, got %v", err)
		})
	})
})
